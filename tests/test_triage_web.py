"""The leak triage queue as people and tools use it (issue 28 item 1): the page at /triage/,
its htmx actions with their confirmation and undo, the allow rules page, the JSON twin."""

from __future__ import annotations

import json
import re

import pytest

from memory.active_save import use
from memory.engine.leaks import stored
from memory.engine.saves import get_save
from memory.models import AuditLog, LeakAcceptance, LeakAllowRule, LeakFinding

HX = {"HTTP_HX_REQUEST": "true"}
KEEPER = ["lighthouse", "ada", "Recent memories", "system_id", "keeper"]
MILLER = ["lighthouse", "bo", "Recent memories", "system_id", "miller"]


def text_of(html: str) -> str:
    return " ".join(re.sub(r"<[^>]+>", " ", html).split())


def title(html: str) -> str:
    return text_of(re.search(r'<h2 id="triage-title">(.*?)</h2>', html, re.S).group(1))


def rows(html: str) -> list[tuple[str, str, str]]:
    """(save, viewer, state) of each row the page lists."""
    return re.findall(
        r'<tr class="leak-row[^"]*" data-save="([^"]*)" data-viewer="([^"]*)" '
        r'data-kind="[^"]*" data-state="([^"]*)"',
        html,
    )


def accepted() -> list[tuple]:
    return list(
        LeakAcceptance.every_save.order_by("game_save__name", "viewer_id", "text").values_list(
            "game_save__name", "viewer_id", "text", "reason"
        )
    )


@pytest.fixture
def both(lighthouse, millbrook):
    """The lighthouse and millbrook, each scanned."""
    with use(get_save("millbrook")):
        stored.refresh()


def test_the_queue_lists_every_save_with_facets_and_readers_cannot_act(both, reader_client):
    page = reader_client.get("/triage/")
    html = page.content.decode()
    assert page.status_code == 200
    assert title(html) == "10 findings: 10 open, 0 accepted"
    assert rows(html) == [("lighthouse", "ada", "open")] * 3 + [
        ("lighthouse", "bo", "open")
    ] * 4 + [
        ("millbrook", "hale", "open"),
        ("millbrook", "ida", "open"),
        ("millbrook", "ida", "open"),
    ]
    assert html.count("likely a description</span>") == 3
    save_facet = re.search(r'<select id="facet-save".*?</select>', html, re.S).group(0)
    assert text_of(save_facet.replace("<option", "|<option")) == (
        "| any save | lighthouse — 7 | millbrook — 3"
    )
    assert "Accept ticked" not in html and 'name="key"' not in html
    assert 'href="/triage/"' in html  # the header links the queue
    refused = reader_client.post("/triage/act/", {"key": json.dumps(KEEPER), "action": "accept"})
    assert refused.status_code == 403
    assert accepted() == []


def test_facets_filter_and_a_chosen_value_with_nothing_left_stays_listed(both, reader_client):
    html = reader_client.get("/triage/?save=lighthouse&word=KEEPER").content.decode()
    assert title(html) == "3 findings: 3 open, 0 accepted"
    assert rows(html) == [
        ("lighthouse", "ada", "open"),
        ("lighthouse", "bo", "open"),
        ("lighthouse", "bo", "open"),
    ]
    html = reader_client.get("/triage/?save=millbrook&viewer=ada").content.decode()
    assert title(html) == "0 findings: 0 open, 0 accepted"
    viewer_facet = re.search(r'<select id="facet-viewer".*?</select>', html, re.S).group(0)
    assert '<option value="ada" selected>ada — 0</option>' in viewer_facet
    fragment = reader_client.get("/triage/?kind=unknown_name", **HX).content.decode()
    assert fragment.lstrip().startswith('<section id="triage-panel"')
    assert rows(fragment) == [("millbrook", "ida", "open")]


def test_bulk_accept_in_place_then_undo(both, editor_client, editor):
    body = {
        "key": [json.dumps(KEEPER), json.dumps(MILLER)],
        "reason": "a lighthouse has a keeper",
        "action": "accept",
        "filter_save": "lighthouse",
    }
    html = editor_client.post("/triage/act/", body, **HX).content.decode()
    assert accepted() == [
        ("lighthouse", "ada", "keeper", "a lighthouse has a keeper"),
        ("lighthouse", "bo", "miller", "a lighthouse has a keeper"),
    ]
    assert title(html) == "7 findings: 5 open, 2 accepted"
    assert "Accepted 2 findings." in text_of(html)
    facet = re.search(r'<select id="facet-state".*?</select>', html, re.S).group(0)
    assert text_of(facet.replace("<option", "|<option")) == "| any state | open — 5 | accepted — 2"
    undo = re.search(r'<div class="confirm" role="status">.*?</div>', html, re.S).group(0)
    keys = re.findall(r'name="key" value="([^"]*)"', undo)
    assert [json.loads(k.replace("&quot;", '"')) for k in keys] == [KEEPER, MILLER]
    back = {"key": [json.dumps(KEEPER), json.dumps(MILLER)], "action": "reopen",
            "filter_save": "lighthouse"}  # fmt: skip
    html = editor_client.post("/triage/act/", back, **HX).content.decode()
    assert accepted() == []
    assert title(html) == "7 findings: 7 open, 0 accepted"
    assert "Reopened 2 findings." in text_of(html)
    # ...and the reopen's own undo accepts them again for the reason they had
    assert 'name="reason" value="a lighthouse has a keeper"' in html
    assert list(AuditLog.objects.values_list("action", flat=True).order_by("id")) == [
        "leak.accept", "leak.accept", "leak.reopen", "leak.reopen"]  # fmt: skip


def test_allow_in_place_closes_every_finding_of_the_word_then_undo(both, editor_client, editor):
    body = {"word": "keeper", "entity_id": "keeper", "save": "lighthouse", "viewer_id": "ada",
            "scope": "save", "reason": "a job, not a name", "filter_save": "lighthouse"}  # fmt: skip
    html = editor_client.post("/triage/allow/", body, **HX).content.decode()
    assert "Allowed “keeper” for keeper (save lighthouse): 3 findings closed." in text_of(html)
    assert title(html) == "4 findings: 4 open, 0 accepted"
    rule = LeakAllowRule.objects.get()
    assert (rule.word, rule.entity_id, rule.save_name, rule.viewer_id, rule.created_by) == (
        "keeper", "keeper", "lighthouse", "", editor)  # fmt: skip
    with use(get_save("lighthouse")):
        assert LeakFinding.objects.filter(entity_id="keeper").count() == 0
    undo = re.search(r'action="(/triage/rules/\d+/revoke/)"', html).group(1)
    html = editor_client.post(undo, {"filter_save": "lighthouse"}, **HX).content.decode()
    assert title(html) == "7 findings: 7 open, 0 accepted"
    assert "Revoked the rule allowing “keeper” for keeper (save lighthouse)." in text_of(html)
    rules = editor_client.get("/triage/rules/").content.decode()
    assert "a job, not a name" in rules and "revoked by eddie" in text_of(rules)


@pytest.mark.parametrize(
    ("body", "status"),
    [
        ({"action": "accept", "reason": "r"}, 400),  # no key: the page with its error
        ({"action": "accept", "key": "not json", "reason": "r"}, 400),
        ({"action": "accept", "key": '["a", 1]', "reason": "r"}, 400),
        (
            {"action": "accept", "key": json.dumps(["nosave", "a", "b", "c", "d"]), "reason": "r"},
            400,
        ),
        (
            {
                "action": "accept",
                "key": json.dumps([*KEEPER[:4], "<script>x</script>"]),
                "reason": "r",
            },
            400,
        ),
        ({"action": "delete", "key": json.dumps(KEEPER)}, 400),
        ({"action": "accept", "key": json.dumps(KEEPER), "reason": "r\x00"}, 400),
        ({"action": "accept", "key": json.dumps(KEEPER), "filter_kind": "nope"}, 400),
    ],
)
def test_hostile_bulk_bodies_are_a_clear_400_and_write_nothing(both, editor_client, body, status):
    response = editor_client.post("/triage/act/", body)
    assert response.status_code == status
    assert "<script>x</script>" not in response.content.decode()
    assert accepted() == [] and AuditLog.objects.count() == 0


def test_hostile_allow_and_revoke(both, editor_client):
    bad = {"word": "<script>alert(1)</script>", "entity_id": "nobody", "save": "lighthouse",
           "viewer_id": "ada", "scope": "save", "reason": "r"}  # fmt: skip
    response = editor_client.post("/triage/allow/", bad)
    assert response.status_code == 400
    assert "<script>alert(1)</script>" not in response.content.decode()
    assert editor_client.post("/triage/allow/", {**bad, "scope": "galaxy"}).status_code == 400
    assert editor_client.post("/triage/rules/999/revoke/", {"from": "rules"}).status_code == 404
    assert LeakAllowRule.objects.count() == 0
    assert editor_client.get("/triage/?cursor=garbage").status_code == 400
    assert editor_client.get("/triage/?state=maybe").status_code == 400


@pytest.mark.parametrize("forged", [[10**30, "ada", 1], [1, "ada", -(2**63) - 1], [2**63, "a", 0]])
@pytest.mark.parametrize("filters", ["", "&kind=system_id"])
def test_a_cursor_with_a_number_no_column_holds_is_refused(both, editor_client, forged, filters):
    """A forged cursor whose numbers lie outside a 64-bit integer is no cursor the queue
    handed out: 400 on the page, 422 on the API (SQLite would not bind it: a 500 before)."""
    from memory.engine.cursor import encode_cursor

    cursor = encode_cursor(forged)
    assert editor_client.get(f"/triage/?cursor={cursor}{filters}").status_code == 400
    response = editor_client.get(f"/api/triage?cursor={cursor}{filters}")
    assert (response.status_code, response.json()["field"]) == (422, "cursor")
    edge = encode_cursor([2**63 - 1, "ada", -(2**63)])  # the widest a column holds: read
    assert editor_client.get(f"/triage/?cursor={edge}{filters}").status_code == 200


def test_keyset_pages_lay_end_to_end(both, reader_client, monkeypatch):
    from memory.selectors import triage

    monkeypatch.setattr(triage, "PAGE_SIZE", 4)
    seen, url = [], "/triage/"
    while url:
        html = reader_client.get(url).content.decode()
        seen += rows(html)
        found = re.search(r'<a href="([^"]*)"[^>]*>later rows', html)
        url = found.group(1).replace("&amp;", "&") if found else None
    assert len(seen) == 10
    assert seen == rows(reader_client.get("/triage/?save=lighthouse").content.decode()) + rows(
        reader_client.get("/triage/?save=millbrook").content.decode()
    )


def test_the_json_twin_and_the_api_writes(both, client, reader, editor):
    client.force_login(reader)
    body = client.get("/api/triage?save=lighthouse&state=open").json()
    assert (body["total"], body["open"], body["accepted"], body["next_cursor"]) == (7, 7, 0, None)
    assert [(i["viewer_id"], i["text"], i["likely_description"]) for i in body["items"]] == [
        ("ada", "keeper", True), ("ada", "castaway", True), ("ada", "miller", True),
        ("bo", "Keeper", False), ("bo", "keeper", False), ("bo", "castaway", False),
        ("bo", "miller", False)]  # fmt: skip
    assert client.get("/api/triage?kind=nope").status_code == 422
    assert client.get("/api/triage?cursor=zzz").status_code == 422
    names = ["save", "viewer_id", "section", "kind", "text"]
    payload = {"keys": [dict(zip(names, KEEPER, strict=True))], "reason": "fine"}
    assert (
        client.post("/api/triage/accept", payload, content_type="application/json").status_code
        == 403
    )
    client.force_login(editor)
    done = client.post("/api/triage/accept", payload, content_type="application/json")
    assert (done.status_code, len(done.json()["done"])) == (200, 1)
    assert client.post("/api/triage/accept", "{", content_type="application/json").status_code in (
        400,
        422,
    )
    made = client.post("/api/triage/rules", {"word": "miller", "entity_id": "miller",
                       "reason": "a trade"}, content_type="application/json")  # fmt: skip
    assert (made.status_code, made.json()["findings_removed"], made.json()["scope"]) == (
        201, 2, "every save")  # fmt: skip
    assert [r["word"] for r in client.get("/api/triage/rules").json()] == ["miller"]
    again = client.post(f"/api/triage/rules/{made.json()['id']}/revoke")
    assert (again.status_code, again.json()["revoked_by"]) == (200, "eddie")
    assert client.post("/api/triage/rules/4242/revoke").status_code == 404


def test_add_alias_on_the_leak_page_confirms_in_place_with_an_undo(editor_client, millbrook):
    from memory.models import AliasChange

    stored.refresh()
    alias = {"viewer_id": "ida", "target_id": "hale", "label": "Hale Morrow"}
    html = editor_client.post("/saves/millbrook/leaks/alias/", alias, **HX).content.decode()
    confirm = re.search(r'<div class="confirm" role="status">.*?</div>', html, re.S).group(0)
    assert text_of(confirm).startswith("Saved: Ida now calls Hale Morrow “Hale Morrow”. Undo")
    assert 'name="label" value="the tanner&#x27;s widow"' in confirm
    # The viewer field's suggestions are what the findings now give.
    assert '<input id="leak-viewer" name="viewer" type="search" value=""' in html
    offered = editor_client.get("/saves/millbrook/leaks/viewers/?viewer=").content.decode()
    assert re.findall(r'<option value="([^"]*)"', offered) == ["hale", "ida"]
    undo = {**alias, "label": "the tanner's widow", "action": "restore"}
    html = editor_client.post("/saves/millbrook/leaks/alias/", undo, **HX).content.decode()
    assert "Undone: Ida’s label for Hale Morrow is back to “the tanner’s widow”." in text_of(
        html.replace("&#x27;", "’")
    )
    assert list(AliasChange.objects.order_by("id").values_list("before", "after")) == [
        ("the tanner's widow", "Hale Morrow"),
        ("Hale Morrow", "the tanner's widow"),
    ]
    assert 'data-kind="unknown_name"' in html  # the finding is back


def test_a_page_of_the_queue_is_a_fixed_number_of_statements(both, django_assert_max_num_queries):
    from memory.selectors import triage

    # saves, states, the page, names and the behind count per save shown, four facets
    with django_assert_max_num_queries(17):
        page = triage.queue(triage.QueueFilters())
    assert (page.total, len(page.items), page.next_cursor) == (10, 10, None)
    with django_assert_max_num_queries(17):
        page = triage.queue(triage.QueueFilters(state="open"), limit=3)
    assert (page.total, len(page.items), page.next_cursor is not None) == (10, 3, True)


def test_the_save_leak_page_labels_descriptions_and_links_the_queue(lighthouse, reader_client):
    html = reader_client.get("/saves/lighthouse/leaks/").content.decode()
    assert html.count("likely a description</span>") == 3
    assert 'href="/triage/?save=lighthouse"' in html
