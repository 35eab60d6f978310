from __future__ import annotations

import json

import pytest

from memory.auth import hash_token, issue_token
from memory.models import AliasChange, ApiToken, AuditLog, BufferEntry, WorldObject
from memory.rows import remember

CHEST_LINE = "[12:03:00 PM] the hooded figure opened the wooden chest (Outcome: Succeeded)"
CHEST = {
    "type": "action",
    "originalText": "x",
    "description": "opened the wooden chest",
    "actorId": "bob",
    "targetIds": [],
}


@pytest.fixture
def chest(cast):
    return remember(
        "alice",
        CHEST,
        timestamp="2026-07-06T12:03:00.000Z",
        outcome={"isValid": True, "reason": "r"},
    ).entry


@pytest.fixture
def staff(django_user_model):
    return django_user_model.objects.create_user("staff", password="pw", is_staff=True)


@pytest.fixture
def reader(django_user_model):
    return django_user_model.objects.create_user("reader", password="pw")


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
    assert_error(client.get("/api/entities"), 401, "unauthorized", None)
    assert_error(client.get("/api/entities", headers=bearer("wrong")), 401, "unauthorized")
    r = client.get("/api/entities", headers=bearer(reader_token))
    assert r.status_code == 200
    assert [e["id"] for e in r.json()["items"]] == ["alice", "bob", "charlie"]


def test_session_login_reads(client, reader, chest) -> None:
    client.force_login(reader)
    assert client.get("/api/viewers/alice/aliases").status_code == 200


def test_entities_search(client, cast, reader_token) -> None:
    r = client.get("/api/entities?q=gareth", headers=bearer(reader_token))
    assert r.json() == {
        "items": [
            {"id": "bob", "world_id": "tavern", "location_id": "tavern-main", "is_agent": True}
        ],
        "count": 1,
    }


def test_aliases_read(client, cast, reader_token) -> None:
    r = client.get("/api/viewers/alice/aliases", headers=bearer(reader_token))
    items = {i["target_id"]: i for i in r.json()["items"]}
    assert items["bob"]["label"] == "the hooded figure"
    assert items["bob"]["state"] == "descriptor"
    assert items["bob"]["true_name"] == "Gareth"


def test_buffer_read_and_entry(client, chest, reader_token) -> None:
    r = client.get("/api/viewers/alice/buffer", headers=bearer(reader_token))
    assert r.status_code == 200
    body = r.json()
    assert [i["line"] for i in body["items"]] == [CHEST_LINE]
    assert body["older"] is None and body["newer"] is None
    r = client.get(f"/api/viewers/alice/entries/{chest.id}", headers=bearer(reader_token))
    assert r.json()["intent"]["description"] == "opened the wooden chest"
    assert r.json()["line"] == CHEST_LINE


def test_buffer_cursor_paging(client, cast, reader_token) -> None:
    for minute in range(5):
        remember(
            "alice",
            {**CHEST, "description": f"waved {minute}"},
            timestamp=f"2026-07-06T12:0{minute}:00.000Z",
        )
    page = client.get("/api/viewers/alice/buffer?limit=2", headers=bearer(reader_token)).json()
    assert [i["line"][-7:] for i in page["items"]] == ["waved 3", "waved 4"]
    older = client.get(
        f"/api/viewers/alice/buffer?limit=2&cursor={page['older']}", headers=bearer(reader_token)
    ).json()
    assert [i["line"][-7:] for i in older["items"]] == ["waved 1", "waved 2"]
    newer = client.get(
        f"/api/viewers/alice/buffer?limit=2&after={older['newer']}", headers=bearer(reader_token)
    ).json()
    assert [i["line"][-7:] for i in newer["items"]] == ["waved 3", "waved 4"]


def test_buffer_type_and_text_filters(client, chest, reader_token) -> None:
    r = client.get("/api/viewers/alice/buffer?type=dialogue", headers=bearer(reader_token))
    assert r.json()["items"] == []
    r = client.get("/api/viewers/alice/buffer?type=action&q=WOODEN", headers=bearer(reader_token))
    assert len(r.json()["items"]) == 1


@pytest.mark.parametrize(
    ("url", "status", "code", "field"),
    [
        ("/api/viewers/nobody/aliases", 404, "not_found", "viewer_id"),
        ("/api/viewers/nobody/buffer", 404, "not_found", "viewer_id"),
        ("/api/viewers/alice/entries/nope", 404, "not_found", "entry_id"),
        ("/api/viewers/alice/buffer?limit=0", 422, "invalid", "limit"),
        ("/api/viewers/alice/buffer?limit=abc", 422, "invalid", "limit"),
        ("/api/viewers/alice/buffer?type=shout", 422, "invalid", "type.0"),
        ("/api/viewers/alice/buffer?before=bogus", 400, "bad_cursor", "before"),
    ],
)
def test_read_errors_have_one_shape(client, chest, reader_token, url, status, code, field) -> None:
    assert_error(client.get(url, headers=bearer(reader_token)), status, code, field)


def test_alias_put_and_delete(client, chest, staff, staff_token) -> None:
    r = client.put(
        "/api/viewers/alice/aliases/bob",
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
    line = client.get("/api/viewers/alice/buffer", headers=bearer(staff_token)).json()["items"][0][
        "line"
    ]
    assert line == "[12:03:00 PM] Gareth opened the wooden chest (Outcome: Succeeded)"
    r = client.delete("/api/viewers/alice/aliases/bob", headers=bearer(staff_token))
    assert r.json()["after"] is None
    assert json.loads(WorldObject.objects.get(pk="alice").aliases_json) == [
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
        f"/api/viewers/alice/aliases/{target}",
        payload,
        content_type="application/json",
        headers=bearer(staff_token),
    )
    assert_error(r, 422, "invalid", field)
    assert not AliasChange.objects.exists()


def test_writes_need_staff(client, chest, reader_token) -> None:
    r = client.put(
        "/api/viewers/alice/aliases/bob",
        {"label": "x"},
        content_type="application/json",
        headers=bearer(reader_token),
    )
    assert_error(r, 403, "forbidden")
    assert_error(
        client.post(
            "/api/viewers/alice/memories",
            {"intent": CHEST},
            content_type="application/json",
            headers=bearer(reader_token),
        ),
        403,
        "forbidden",
    )
    assert_error(
        client.post(f"/api/memories/{chest.id}/retract", headers=bearer(reader_token)),
        403,
        "forbidden",
    )
    assert_error(
        client.put(
            "/api/viewers/alice/aliases/bob", {"label": "x"}, content_type="application/json"
        ),
        401,
        "unauthorized",
    )


def test_remember_and_retract(client, cast, staff_token) -> None:
    r = client.post(
        "/api/viewers/alice/memories",
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
    assert BufferEntry.objects.get(pk=entry_id).owner_id == "alice"
    assert (
        client.get("/api/viewers/alice/buffer", headers=bearer(staff_token)).json()["items"][0][
            "line"
        ]
        == CHEST_LINE
    )
    r = client.post(f"/api/memories/{entry_id}/retract", headers=bearer(staff_token))
    assert r.status_code == 200 and r.json()["retracted"] is True
    assert BufferEntry.objects.get(pk=entry_id).retracted_at is not None
    assert_error(
        client.post("/api/memories/nope/retract", headers=bearer(staff_token)),
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
        "/api/viewers/alice/memories",
        payload,
        content_type="application/json",
        headers=bearer(staff_token),
    )
    assert_error(r, 422, "invalid", field)
    assert not BufferEntry.objects.exists()


def test_remember_unknown_viewer_is_404(client, cast, staff_token) -> None:
    r = client.post(
        "/api/viewers/nobody/memories",
        {"intent": CHEST},
        content_type="application/json",
        headers=bearer(staff_token),
    )
    assert_error(r, 404, "not_found", "viewer_id")


def test_openapi_documents_error_shape(client) -> None:
    schema = client.get("/api/openapi.json").json()
    assert "ErrorOut" in schema["components"]["schemas"]
    assert schema["paths"]["/api/viewers/{viewer_id}/buffer"]["get"]["responses"]["404"]
