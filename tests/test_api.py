from __future__ import annotations

import json

import pytest

from memory.engine.write_door import remember
from memory.models import AliasChange, ApiToken, AuditLog, BufferEntry, WorldObject
from memory.tokens import hash_token, issue_token
from tests.helpers import CHEST, CHEST_LINE


@pytest.fixture
def reader_token(reader) -> str:
    return issue_token(reader, "ci")[1]


@pytest.fixture
def staff_token(staff) -> str:
    return issue_token(staff, "ops")[1]


def bearer(token: str) -> dict:
    return {"Authorization": f"Bearer {token}"}


def assert_error(r, status: int, code: str, field=...) -> dict:
    assert r.status_code == status, r.content
    body = r.json()
    assert set(body) == {"detail", "code", "field"}
    assert body["code"] == code
    if field is not ...:
        assert body["field"] == field
    return body


def test_tokens_are_stored_hashed(reader_token) -> None:
    token = ApiToken.objects.get()
    assert token.key_hash == hash_token(reader_token) and reader_token not in (
        token.key_hash,
        token.prefix + "x",
    )


def test_reads_need_login_or_token(client, chest, reader_token) -> None:
    assert_error(client.get("/api/saves/cast/entities"), 401, "unauthorized", None)
    assert_error(
        client.get("/api/saves/cast/entities", headers=bearer("wrong")), 401, "unauthorized"
    )
    r = client.get("/api/saves/cast/entities", headers=bearer(reader_token))
    assert r.status_code == 200
    assert [e["id"] for e in r.json()["items"]] == ["alice", "bob", "charlie"]


def test_session_login_reads(client, reader, chest) -> None:
    client.force_login(reader)
    r = client.get("/api/saves/cast/viewers/alice/aliases")
    assert r.status_code == 200
    assert [(i["target_id"], i["label"]) for i in r.json()["items"]] == [
        ("bob", "the hooded figure"),
        ("charlie", "the bartender"),
    ]


def test_entities_search(client, cast, reader_token) -> None:
    r = client.get("/api/saves/cast/entities?q=gareth", headers=bearer(reader_token))
    assert r.json() == {
        "items": [
            {
                "id": "bob",
                "name": "Gareth",
                "world_id": "tavern",
                "location_id": "tavern-main",
                "is_agent": True,
            }
        ],
        "count": 1,
        "total": 1,
    }


def test_aliases_read(client, cast, reader_token) -> None:
    r = client.get("/api/saves/cast/viewers/alice/aliases", headers=bearer(reader_token))
    items = {i["target_id"]: i for i in r.json()["items"]}
    assert items["bob"]["label"] == "the hooded figure"
    assert items["bob"]["state"] == "descriptor"
    assert items["bob"]["true_name"] == "Gareth"


def test_aliases_page_by_page_with_labels_outside_the_world_last(client, cast, reader_token):
    # A label for an id the world does not hold closes the list, as on the page.
    WorldObject.objects.filter(id="alice").update(
        aliases_json=json.dumps([["bob", "the hooded figure"], ["ghost", "the pale one"]])
    )

    def page(query: str) -> tuple[list[tuple[str, str | None]], int]:
        r = client.get(
            f"/api/saves/cast/viewers/alice/aliases?{query}", headers=bearer(reader_token)
        )
        assert r.status_code == 200, r.content
        return [(i["target_id"], i["label"]) for i in r.json()["items"]], r.json()["total"]

    assert page("") == (
        [("bob", "the hooded figure"), ("charlie", None), ("ghost", "the pale one")],
        3,
    )
    assert page("limit=2") == ([("bob", "the hooded figure"), ("charlie", None)], 3)
    assert page("limit=2&offset=1") == ([("charlie", None), ("ghost", "the pale one")], 3)
    assert page("offset=2") == ([("ghost", "the pale one")], 3)
    assert page("offset=3") == ([], 3)
    for query, field in (("limit=0", "limit"), ("limit=501", "limit"), ("offset=-1", "offset")):
        r = client.get(
            f"/api/saves/cast/viewers/alice/aliases?{query}", headers=bearer(reader_token)
        )
        assert_error(r, 422, "invalid", field)


def test_entities_page_by_page(client, cast, reader_token) -> None:
    def page(query: str) -> tuple[list[str], int, int]:
        body = client.get(f"/api/saves/cast/entities?{query}", headers=bearer(reader_token)).json()
        return [e["id"] for e in body["items"]], body["count"], body["total"]

    assert page("") == (["alice", "bob", "charlie"], 3, 3)
    assert page("limit=2") == (["alice", "bob"], 2, 3)
    assert page("limit=2&offset=2") == (["charlie"], 1, 3)
    assert page("offset=5") == ([], 0, 3)
    assert page("q=gareth&limit=1") == (["bob"], 1, 1)


def test_buffer_read_and_entry(client, chest, reader_token) -> None:
    r = client.get("/api/saves/cast/viewers/alice/buffer", headers=bearer(reader_token))
    assert r.status_code == 200
    body = r.json()
    assert [i["line"] for i in body["items"]] == [CHEST_LINE]
    assert body["older"] is None and body["newer"] is None
    r = client.get(
        f"/api/saves/cast/viewers/alice/entries/{chest.id}", headers=bearer(reader_token)
    )
    assert r.json()["intent"]["description"] == "opened the wooden chest"
    assert r.json()["line"] == CHEST_LINE


def test_buffer_cursor_paging(client, cast, reader_token) -> None:
    for minute in range(5):
        remember(
            "alice",
            {**CHEST, "description": f"waved {minute}"},
            timestamp=f"2026-07-06T12:0{minute}:00.000Z",
        )
    page = client.get(
        "/api/saves/cast/viewers/alice/buffer?limit=2", headers=bearer(reader_token)
    ).json()
    assert [i["line"][-7:] for i in page["items"]] == ["waved 3", "waved 4"]
    older = client.get(
        f"/api/saves/cast/viewers/alice/buffer?limit=2&cursor={page['older']}",
        headers=bearer(reader_token),
    ).json()
    assert [i["line"][-7:] for i in older["items"]] == ["waved 1", "waved 2"]
    newer = client.get(
        f"/api/saves/cast/viewers/alice/buffer?limit=2&after={older['newer']}",
        headers=bearer(reader_token),
    ).json()
    assert [i["line"][-7:] for i in newer["items"]] == ["waved 3", "waved 4"]


def test_buffer_type_and_text_filters(client, chest, reader_token) -> None:
    r = client.get(
        "/api/saves/cast/viewers/alice/buffer?type=dialogue", headers=bearer(reader_token)
    )
    assert r.json()["items"] == []
    r = client.get(
        "/api/saves/cast/viewers/alice/buffer?type=action&q=WOODEN", headers=bearer(reader_token)
    )
    assert len(r.json()["items"]) == 1


@pytest.mark.parametrize(
    ("url", "status", "code", "field"),
    [
        ("/api/saves/cast/viewers/nobody/aliases", 404, "not_found", "viewer_id"),
        ("/api/saves/cast/viewers/nobody/buffer", 404, "not_found", "viewer_id"),
        ("/api/saves/cast/viewers/alice/entries/nope", 404, "not_found", "entry_id"),
        ("/api/saves/cast/viewers/alice/buffer?limit=0", 422, "invalid", "limit"),
        ("/api/saves/cast/viewers/alice/buffer?limit=abc", 422, "invalid", "limit"),
        ("/api/saves/cast/viewers/alice/buffer?type=shout", 422, "invalid", "type.0"),
        ("/api/saves/cast/viewers/alice/buffer?before=bogus", 400, "bad_cursor", "before"),
    ],
)
def test_read_errors_have_one_shape(client, chest, reader_token, url, status, code, field) -> None:
    assert_error(client.get(url, headers=bearer(reader_token)), status, code, field)


def test_alias_put_and_delete(client, chest, staff, staff_token) -> None:
    r = client.put(
        "/api/saves/cast/viewers/alice/aliases/bob",
        {"label": "Gareth"},
        content_type="application/json",
        headers=bearer(staff_token),
    )
    assert r.status_code == 200
    assert r.json() == {
        "viewer_id": "alice",
        "target_id": "bob",
        "before": "the hooded figure",
        "after": "Gareth",
        "warnings": [],
        "changed": True,
    }
    assert AliasChange.objects.get().changed_by == staff
    line = client.get("/api/saves/cast/viewers/alice/buffer", headers=bearer(staff_token)).json()[
        "items"
    ][0]["line"]
    assert line == "[12:03:00 PM] Gareth opened the wooden chest (Outcome: Succeeded)"
    r = client.delete("/api/saves/cast/viewers/alice/aliases/bob", headers=bearer(staff_token))
    assert r.json()["after"] is None
    assert json.loads(WorldObject.objects.get(id="alice").aliases_json) == [
        ["charlie", "the bartender"]
    ]
    assert list(AuditLog.objects.order_by("id").values_list("action", flat=True)) == [
        "alias.set",
        "alias.delete",
    ]


@pytest.mark.parametrize(
    ("target", "payload", "field"),
    [
        ("bob", {"label": "charlie"}, "label"),
        ("bob", {"label": "a 01ARZ3NDEKTSV4RRFFQ69G5FAV"}, "label"),
        ("bob", {"label": ""}, "label"),
        ("bob", {}, "label"),
        ("alice", {"label": "me"}, "target_id"),
        ("nobody", {"label": "x"}, "target_id"),
    ],
)
def test_alias_put_validation(client, chest, staff_token, target, payload, field) -> None:
    r = client.put(
        f"/api/saves/cast/viewers/alice/aliases/{target}",
        payload,
        content_type="application/json",
        headers=bearer(staff_token),
    )
    assert_error(r, 422, "invalid", field)
    assert not AliasChange.objects.exists()


def test_writes_need_the_editor_role(client, chest, reader_token) -> None:
    r = client.put(
        "/api/saves/cast/viewers/alice/aliases/bob",
        {"label": "x"},
        content_type="application/json",
        headers=bearer(reader_token),
    )
    assert assert_error(r, 403, "forbidden")["detail"] == "writes need the editor role"
    assert_error(
        client.post(
            "/api/saves/cast/viewers/alice/memories",
            {"intent": CHEST},
            content_type="application/json",
            headers=bearer(reader_token),
        ),
        403,
        "forbidden",
    )
    assert_error(
        client.post(f"/api/saves/cast/memories/{chest.id}/retract", headers=bearer(reader_token)),
        403,
        "forbidden",
    )
    assert_error(
        client.put(
            "/api/saves/cast/viewers/alice/aliases/bob",
            {"label": "x"},
            content_type="application/json",
        ),
        401,
        "unauthorized",
    )


def test_remember_and_retract(client, cast, staff_token) -> None:
    r = client.post(
        "/api/saves/cast/viewers/alice/memories",
        {
            "intent": CHEST,
            "outcome": {"isValid": True, "reason": "r"},
            "timestamp": "2026-07-06T12:03:00.000Z",
        },
        content_type="application/json",
        headers=bearer(staff_token),
    )
    assert r.status_code == 201
    entry_id = r.json()["id"]
    assert BufferEntry.objects.get(id=entry_id).owner_id == "alice"
    assert (
        client.get("/api/saves/cast/viewers/alice/buffer", headers=bearer(staff_token)).json()[
            "items"
        ][0]["line"]
        == CHEST_LINE
    )
    r = client.post(f"/api/saves/cast/memories/{entry_id}/retract", headers=bearer(staff_token))
    assert r.status_code == 200 and r.json()["retracted"] is True
    assert BufferEntry.objects.get(id=entry_id).retracted_at is not None
    assert_error(
        client.post("/api/saves/cast/memories/nope/retract", headers=bearer(staff_token)),
        404,
        "not_found",
        "entry_id",
    )
    assert list(AuditLog.objects.order_by("id").values_list("action", flat=True)) == [
        "memory.remember",
        "memory.retract",
    ]


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        ({"intent": {"type": "shout", "actorId": "bob"}}, "intent"),
        ({"intent": CHEST, "outcome": {"isValid": "yes"}}, "outcome"),
        ({}, "intent"),
    ],
)
def test_remember_validation(client, cast, staff_token, payload, field) -> None:
    r = client.post(
        "/api/saves/cast/viewers/alice/memories",
        payload,
        content_type="application/json",
        headers=bearer(staff_token),
    )
    assert_error(r, 422, "invalid", field)
    assert not BufferEntry.objects.exists()


def test_remember_unknown_viewer_is_404(client, cast, staff_token) -> None:
    r = client.post(
        "/api/saves/cast/viewers/nobody/memories",
        {"intent": CHEST},
        content_type="application/json",
        headers=bearer(staff_token),
    )
    assert_error(r, 404, "not_found", "viewer_id")


def test_openapi_documents_error_shape(client, django_user_model) -> None:
    client.force_login(django_user_model.objects.create_user("schema-reader", password="pw"))
    schema = client.get("/api/openapi.json").json()
    assert "ErrorOut" in schema["components"]["schemas"]
    assert schema["paths"]["/api/saves/{save}/viewers/{viewer_id}/buffer"]["get"]["responses"][
        "404"
    ]


def test_openapi_and_docs_need_a_login(client, db) -> None:
    """Issue 14 item 11: they answered anonymous callers."""
    r = client.get("/api/openapi.json")
    assert (r.status_code, r.json()) == (
        401,
        {"detail": "log in to read the API schema", "code": "unauthorized", "field": None},
    )
    r = client.get("/api/docs")
    assert r.status_code == 302 and r["Location"] == "/accounts/login/?next=/api/docs"


# --- sessions, digest, episodes, faces, long-term, prompt, leaks, doors -------------------------


OLDER_PIP_SESSIONS = ["conv-breakfast", "scene:loc-drowned-lantern"]
PIP_DIGEST = [
    "A scene at a low-beamed tavern with fishing nets hung from the rafters at 9:33 AM: "
    "1 memory, 0 spoken",
    "A conversation at a low-beamed tavern with fishing nets hung from the rafters "
    "from 9:36 AM to 9:55 AM: 5 memories, 4 spoken",
    "A conversation at a fish-scented stone quay where the night boats tie up "
    "from 12:07 PM to 12:14 PM: 4 memories, 3 spoken",
    "A scene at a fish-scented stone quay where the night boats tie up "
    "from 8:02 AM to 12:25 PM: 9 memories, 3 spoken",
]


def test_sessions_episodes_and_digest_twins(client, demo, reader_token) -> None:
    h = bearer(reader_token)
    sessions = client.get("/api/saves/demo/viewers/npc-pip/sessions?limit=2", headers=h).json()
    assert [s["session_key"] for s in sessions["items"]] == ["scene:loc-quay", "conv-standoff"]
    assert sessions["items"][0] == {
        "session_key": "scene:loc-quay",
        "kind": "scene",
        "first_at": "2026-07-06T08:02:00.000Z",
        "last_at": "2026-07-06T12:25:00.000Z",
        "memory_count": 9,
        "dialogue_count": 3,
        "last_member_id": "m-d10-pip",
        "content_hash": sessions["items"][0]["content_hash"],
        "live_count": 9,
    }
    older = client.get(
        f"/api/saves/demo/viewers/npc-pip/sessions?limit=2&before={sessions['next_cursor']}",
        headers=h,
    ).json()
    assert [s["session_key"] for s in older["items"]] == OLDER_PIP_SESSIONS
    assert_error(
        client.get("/api/saves/demo/viewers/npc-pip/sessions?before=%21%21", headers=h),
        422,
        "invalid",
        "before",
    )
    digest = client.get("/api/saves/demo/viewers/npc-pip/digest", headers=h).json()
    assert digest["lines"] == PIP_DIGEST and digest["unchanged"] is False
    same = client.get(
        f"/api/saves/demo/viewers/npc-pip/digest?known_hash={digest['hash']}", headers=h
    ).json()
    assert same == {
        "viewer_id": "npc-pip",
        "lines": [],
        "hash": digest["hash"],
        "unchanged": True,
        "rows_visited": same["rows_visited"],
    }
    episodes = client.get("/api/saves/demo/viewers/npc-pip/episodes?limit=2", headers=h).json()
    assert episodes["items"][0] == {
        "ordinal": 3,
        "first_at": "2026-07-06T12:07:00.000Z",
        "last_at": "2026-07-06T12:25:00.000Z",
        "first_member_id": "m-d02-pip",
        "last_member_id": "m-d10-pip",
        "member_count": 7,
        "is_open": True,
    }
    assert [e["ordinal"] for e in episodes["items"]] == [3, 2] and episodes["next_cursor"]
    assert_error(
        client.get("/api/saves/demo/viewers/nobody/digest", headers=h),
        404,
        "not_found",
        "viewer_id",
    )
    assert_error(
        client.get("/api/saves/demo/viewers/npc-pip/episodes?limit=0", headers=h),
        422,
        "invalid",
        "limit",
    )


def test_faces_twin_default_and_include_shadowed(client, demo, reader_token) -> None:
    h = bearer(reader_token)
    default = client.get("/api/saves/demo/viewers/npc-tobiah/faces", headers=h).json()
    assert [i["id"] for i in default["items"]] == [
        "abs-tobiah-signal-nights",
        "ltm-tobiah-03",
        "lore-brandy",
        "lore-lighthouse",
        "lore-signal",
    ]
    assert default["shadowed"] == {"lore-gullwing": "ltm-tobiah-03"}
    assert default["superseded"] == {"ltm-tobiah-01": "abs-tobiah-signal-nights"}
    assert default["withheld"] == ["ltm-tobiah-02"]
    assert default["rows_visited"] == 11
    full = client.get(
        "/api/saves/demo/viewers/npc-tobiah/faces?include_shadowed=true", headers=h
    ).json()
    tagged = {
        i["id"]: (i["state"], i["tags"], i["shadowed_by"], i["superseded_by"])
        for i in full["items"]
    }
    assert tagged["lore-gullwing"] == ("shadowed", ["[shadowed]"], "ltm-tobiah-03", None)
    assert tagged["ltm-tobiah-01"] == (
        "superseded",
        ["[superseded]"],
        None,
        "abs-tobiah-signal-nights",
    )
    assert len(full["items"]) == 7


def test_long_term_entry_search_and_slug_twins(client, demo, reader_token) -> None:
    h = bearer(reader_token)
    member = client.get(
        "/api/saves/demo/viewers/npc-tobiah/long-term/ltm-tobiah-01", headers=h
    ).json()
    assert member["notes"] == [
        "[superseded] consolidated into abs-tobiah-signal-nights; delivered by id as evidence"
    ]
    assert member["rollup"] == {"id": "abs-tobiah-signal-nights", "title": "Signal Nights"}
    assert member["members"] == [] and member["item"]["state"] == "superseded"
    rollup = client.get(
        "/api/saves/demo/viewers/npc-tobiah/long-term/abs-tobiah-signal-nights", headers=h
    ).json()
    assert [m["id"] for m in rollup["members"]] == ["ltm-tobiah-01", "m-b11-tobiah", "m-d01-tobiah"]
    # every member has a title: a long-term entry its name, a buffer memory the line it reads
    assert [m["title"] for m in rollup["members"]] == [
        "The Signal",
        "Sable Quint says 'Watch the lamp tonight. If the old man signals, we land the rest.' "
        "to me",
        "I hope the brass-buttoned woman doesn't look under the tarp",
    ]
    assert rollup["rollup"] is None and rollup["notes"] == []
    carrier = client.get(
        "/api/saves/demo/viewers/npc-tobiah/long-term/ltm-tobiah-03", headers=h
    ).json()
    assert carrier["shadows"] == [{"id": "lore-gullwing", "title": "The Gullwing"}]
    assert_error(
        client.get("/api/saves/demo/viewers/npc-tobiah/long-term/nope", headers=h),
        404,
        "not_found",
        "entry_id",
    )
    found = client.get("/api/saves/demo/viewers/npc-maren/search?q=harbor", headers=h).json()
    assert [i["id"] for i in found["items"]] == ["ltm-maren-01"]
    assert found["q"] == "harbor" and found["include_shadowed"] is False
    slug = client.get(
        "/api/saves/demo/viewers/npc-oswin/resolve?slug=oswin/the-lighthouse", headers=h
    ).json()
    assert slug["item"]["id"] == "ltm-oswin-01" and slug["slug"] == "oswin/the-lighthouse"
    assert_error(
        client.get("/api/saves/demo/viewers/npc-oswin/resolve?slug=no/such-slug", headers=h),
        404,
        "not_found",
        "slug",
    )


def test_prompt_and_leaks_twins(client, demo, reader, reader_token) -> None:
    h = bearer(reader_token)
    prompt = client.get("/api/saves/demo/viewers/npc-pip/prompt", headers=h).json()
    (finding,) = prompt["findings"]
    assert prompt["text"][finding["start"] : finding["end"]] == "Sable Quint"
    assert finding == {
        "viewer_id": "npc-pip",
        "section": "Recent memories",
        "kind": "unknown_name",
        "start": finding["start"],
        "end": finding["start"] + len("Sable Quint"),
        "text": "Sable Quint",
        "entity_id": "npc-sable",
        "attribute_name": None,
        "reason": "npc-pip knows npc-sable only as 'the tall one in grey'",
        "likely_description": False,
        "world_id": "harbor-town",
        "count": 1,
        "source_id": "m-a06-pip",
        "occurrences": [
            {"start": finding["start"], "end": finding["end"], "source_id": "m-a06-pip"}
        ],
        "context_before": finding["context_before"],
        "context_after": finding["context_after"],
        "state": "open",
        "accepted_reason": None,
        "accepted_by": None,
        "accepted_at": None,
        # The moment the line carrying the name came into pip's prompt.
        "first_at": "2026-07-06T08:24:00.000Z",
        "first_line": "The sailor with the eye patch whispers 'Run and tell Sable Quint the boat "
        "is in. Quick now.' to me",
    }
    line = finding["context_before"] + "Sable Quint" + finding["context_after"]
    assert line in prompt["text"] and "\n" not in line
    assert [s["name"] for s in prompt["sections"]][0] == "Current moment"
    leaks = client.get("/api/saves/demo/leaks", headers=h).json()
    assert leaks["count"] == 4
    assert [(f["viewer_id"], f["kind"]) for f in leaks["items"]] == [
        ("5b0e6c1a-3f2d-4e8b-9a71-c4d2e8f90a13", "system_id"),
        ("5b0e6c1a-3f2d-4e8b-9a71-c4d2e8f90a13", "private_attribute"),
        ("npc-oswin", "system_id"),
        ("npc-pip", "unknown_name"),
    ]
    ids = client.get("/api/saves/demo/leaks?kind=system_id&viewer=npc-oswin", headers=h).json()
    assert [(f["viewer_id"], f["text"]) for f in ids["items"]] == [("npc-oswin", "npc-sable")]
    assert_error(
        client.get("/api/saves/demo/leaks?viewer=nobody", headers=h), 404, "not_found", "viewer_id"
    )
    # the page and its JSON twin agree
    client.force_login(reader)
    assert client.get("/saves/demo/leaks.json").json()["items"] == leaks["items"]


def test_abstract_door_lands_once_and_conflicts_on_stale_generation(
    client, demo, staff_token, reader_token
) -> None:
    from memory.models import AbstractionEdge, BufferEntry, LedgerEntry

    payload = {
        "member_ids": ["m-a01-pip", "m-a02-pip"],
        "name": "Dawn on the Quay",
        "body": "Crates came off the Gullwing before the fog lifted.",
        "expected_generation": 1,  # loading the demo wrote pip's memories: generation 1
    }
    assert_error(
        client.post(
            "/api/saves/demo/viewers/npc-pip/abstract",
            payload,
            content_type="application/json",
            headers=bearer(reader_token),
        ),
        403,
        "forbidden",
    )
    r = client.post(
        "/api/saves/demo/viewers/npc-pip/abstract",
        payload,
        content_type="application/json",
        headers=bearer(staff_token),
    )
    assert r.status_code == 201, r.content
    body = r.json()
    assert body == {
        "id": body["id"],
        "owner_id": "npc-pip",
        "scope": "home:npc-pip",
        "slug": body["slug"],
        "name": "Dawn on the Quay",
        "generation": 2,
        "member_ids": ["m-a01-pip", "m-a02-pip"],
    }
    assert set(
        BufferEntry.objects.filter(abstracted_into=body["id"]).values_list("id", flat=True)
    ) == {"m-a01-pip", "m-a02-pip"}
    ledger_count = LedgerEntry.objects.count()
    edges = AbstractionEdge.objects.count()
    stale = client.post(
        "/api/saves/demo/viewers/npc-pip/abstract",
        {**payload, "member_ids": ["m-a04-pip"]},
        content_type="application/json",
        headers=bearer(staff_token),
    )
    assert_error(stale, 409, "conflict", "expected_generation")
    absorbed = client.post(
        "/api/saves/demo/viewers/npc-pip/abstract",
        {**payload, "expected_generation": 2},
        content_type="application/json",
        headers=bearer(staff_token),
    )
    assert_error(absorbed, 409, "conflict", "member_ids")
    assert LedgerEntry.objects.count() == ledger_count and AbstractionEdge.objects.count() == edges
    assert_error(
        client.post(
            "/api/saves/demo/viewers/npc-pip/abstract",
            {**payload, "member_ids": []},
            content_type="application/json",
            headers=bearer(staff_token),
        ),
        422,
        "invalid",
        "member_ids",
    )


def test_projection_doors(client, demo, staff_token, reader_token) -> None:
    from memory.models import MemorySession

    for door in ("cycle", "rebuild", "verify"):
        assert_error(
            client.post(f"/api/saves/demo/projections/{door}", headers=bearer(reader_token)),
            403,
            "forbidden",
        )
    remember("npc-pip", CHEST | {"actorId": "npc-pip"})
    cycle = client.post("/api/saves/demo/projections/cycle", headers=bearer(staff_token)).json()
    assert cycle == {
        "rows_visited": 3,
        "rows_folded": 1,
        "sessions_written": 1,
        "shards_skipped": [],
    }
    sessions = MemorySession.objects.count()
    rebuild = client.post("/api/saves/demo/projections/rebuild", headers=bearer(staff_token)).json()
    assert rebuild["rows_folded"] == BufferEntry.objects.count()
    assert rebuild["sessions"] == sessions == MemorySession.objects.count()
    verify = client.post("/api/saves/demo/projections/verify", headers=bearer(staff_token)).json()
    assert (verify["sessions"], verify["identical"], verify["drift"]) == (sessions, sessions, [])
    # Every projection's drift travels in the API twin too (issue 13: episodes, shards, problems).
    assert verify["episodes"]["drift"] == []
    assert verify["episodes"]["episodes"] == verify["episodes"]["identical"] > 0
    assert verify["shards"] == {"configured": 4, "stored": 4, "stranded_rows": 0}
    assert verify["problems"] == {"rows": 0, "recorded": 0, "drift": []}
    assert AuditLog.objects.filter(action__startswith="projections.").count() == 2


def test_remember_is_a_handful_of_round_trips(client, cast, staff_token) -> None:
    """The write door's cost is its queries (each a round trip under load): token, role,
    owner + world clock, shard claim (UPDATE … RETURNING), insert, the owner's stored leak
    findings marked behind (what the leak pages read instead of every viewer's inputs),
    generation (UPDATE … RETURNING), NOTIFY on PostgreSQL, audit row. No re-reads."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    client.post(  # the first write of an owner creates its generation row: one more INSERT
        "/api/saves/cast/viewers/alice/memories",
        {"intent": CHEST},
        content_type="application/json",
        headers=bearer(staff_token),
    )
    with CaptureQueriesContext(connection) as ctx:
        r = client.post(
            "/api/saves/cast/viewers/alice/memories",
            {"intent": CHEST},
            content_type="application/json",
            headers=bearer(staff_token),
        )
    assert r.status_code == 201
    assert r.json()["generation"] == 2
    assert BufferEntry.objects.filter(owner_id="alice").count() == 2
    # The test's own transaction turns the service's BEGIN/COMMIT into SAVEPOINT/RELEASE.
    statements = [
        " ".join(q["sql"].replace('"', "").split()[:4])
        for q in ctx.captured_queries
        if not q["sql"].startswith(("SAVEPOINT", "RELEASE"))
    ]
    greatest = "GREATEST" if connection.vendor == "postgresql" else "MAX"
    assert [s.split(" SET ")[0] if s.startswith("UPDATE") else s for s in statements] == [
        "SELECT id, name, kind,",  # the save in the URL (engine.saves.find_save)
        "SELECT memory_api_tokens.id, memory_api_tokens.user_id, memory_api_tokens.name,",
        "SELECT o.location_id, w.clock_iso, EXISTS",  # owner, its world's clock, the actor
        "UPDATE memory_projection_shards",
        "INSERT INTO buffer_entries (game_save_id,",
        "UPDATE memory_leak_scans",
        "UPDATE memory_owner_state",
        *(["NOTIFY omnia_memory"] if connection.vendor == "postgresql" else []),
        "INSERT INTO memory_audit_log (actor_id,",
    ]
    assert f"{greatest}(" in ctx.captured_queries[4]["sql"]


@pytest.mark.parametrize(
    ("method", "url", "payload", "status", "code", "field"),
    [
        ("get", "/api/saves/cast/entities?q=a%00b", None, 422, "invalid", "q"),
        ("get", "/api/saves/cast/entities?world_id=%00", None, 422, "invalid", "world_id"),
        ("get", "/api/saves/cast/viewers/alice/buffer?q=%00", None, 422, "invalid", "q"),
        (
            "get",
            "/api/saves/cast/viewers/alice/sessions?before=%00",
            None,
            422,
            "invalid",
            "before",
        ),
        (
            "get",
            "/api/saves/cast/viewers/alice/digest?known_hash=%00",
            None,
            422,
            "invalid",
            "known_hash",
        ),
        ("get", "/api/saves/cast/viewers/alice/search?q=%00", None, 422, "invalid", "q"),
        ("get", "/api/saves/cast/leaks?kind=%00", None, 422, "invalid", "kind"),
        ("get", "/api/saves/cast/viewers/al%00ice/buffer", None, 404, "not_found", "viewer_id"),
        ("get", "/api/saves/cast/viewers/alice/entries/x%00", None, 404, "not_found", "entry_id"),
        ("get", "/api/saves/cast/viewers/alice/resolve?slug=%00", None, 404, "not_found", "slug"),
        (
            "put",
            "/api/saves/cast/viewers/alice/aliases/bob",
            {"label": "a\x00b"},
            422,
            "invalid",
            "label",
        ),
        (
            "put",
            "/api/saves/cast/viewers/alice/aliases/b%00b",
            {"label": "x"},
            404,
            "not_found",
            "target_id",
        ),
        (
            "post",
            "/api/saves/cast/viewers/alice/memories",
            {"intent": CHEST, "location_id": "\x00"},
            422,
            "invalid",
            "location_id",
        ),
        (
            "post",
            "/api/saves/cast/viewers/alice/abstract",
            {"member_ids": ["m\x00"], "name": "n", "body": "b", "expected_generation": 0},
            422,
            "invalid",
            "member_ids",
        ),
        ("post", "/api/saves/cast/memories/x%00/retract", None, 404, "not_found", "entry_id"),
    ],
)
def test_nul_is_refused_before_the_database(
    client, cast, staff_token, method, url, payload, status, code, field
) -> None:
    """PostgreSQL cannot store NUL in text: an id holding one names nothing (404), any other
    text holding one is invalid input (422), on every backend alike."""
    kwargs = {"content_type": "application/json"} if payload is not None else {}
    r = getattr(client, method)(url, payload, headers=bearer(staff_token), **kwargs)
    assert_error(r, status, code, field)
    assert not BufferEntry.objects.exists() and not AliasChange.objects.exists()
