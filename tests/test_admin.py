from __future__ import annotations

import json

import pytest

from memory.engine.write_door import remember
from memory.models import AliasChange, AuditLog, WorldObject

pytestmark = pytest.mark.usefixtures("cast")


def change_url(entity_id: str) -> str:
    """The admin keys an entity by its integer uid (ids repeat across saves)."""
    from memory.models import WorldObject

    return f"/admin/memory/entity/{WorldObject.objects.get(id=entity_id).uid}/change/"


def _post(client, viewer: str, rows: list[tuple[str, str, bool]], initial: int) -> object:
    data = {
        "aliases-TOTAL_FORMS": str(len(rows)),
        "aliases-INITIAL_FORMS": str(initial),
        "aliases-MIN_NUM_FORMS": "0",
        "aliases-MAX_NUM_FORMS": "1000",
    }
    for i, (target, label, delete) in enumerate(rows):
        data[f"aliases-{i}-target"] = target
        data[f"aliases-{i}-label"] = label
        if delete:
            data[f"aliases-{i}-DELETE"] = "on"
    return client.post(change_url(viewer), data)


def aliases_of(entity_id: str) -> list:
    return json.loads(WorldObject.objects.get(id=entity_id).aliases_json)


def test_admin_entity_page_shows_alias_table_attributes_and_history(root_client) -> None:
    r = root_client.get(change_url("alice"))
    body = r.content.decode()
    assert r.status_code == 200
    assert 'name="aliases-0-label" value="the hooded figure"' in body
    assert "searching for her missing brother" in body  # attributes, read-only
    assert "No changes recorded." in body


def test_admin_alias_edit_saves_and_records_history(root_client) -> None:
    r = _post(
        root_client,
        "alice",
        [("bob", "the stranger", False), ("charlie", "the bartender", False)],
        2,
    )
    assert r.status_code == 302
    assert aliases_of("alice") == [["bob", "the stranger"], ["charlie", "the bartender"]]
    change = AliasChange.objects.get()
    assert (change.viewer_id, change.target_id, change.before, change.after, change.source) == (
        "alice",
        "bob",
        "the hooded figure",
        "the stranger",
        "admin",
    )
    assert AuditLog.objects.filter(action="alias.set", target="alice->bob").count() == 1


def test_admin_alias_delete_row_forgets_alias(root_client) -> None:
    r = _post(
        root_client,
        "alice",
        [("bob", "the hooded figure", True), ("charlie", "the bartender", False)],
        2,
    )
    assert r.status_code == 302
    assert aliases_of("alice") == [["charlie", "the bartender"]]
    assert AliasChange.objects.get().after is None


@pytest.mark.parametrize(
    ("target", "label", "message"),
    [
        ("alice", "me", "Select a valid choice"),
        ("bob", "charlie", "is a system id"),
        ("bob", "man 0f8fad5b-d9cb-469f-a165-70867728950e", "contains a generated id"),
    ],
)
def test_admin_alias_refusals_change_nothing(root_client, target, label, message) -> None:
    before = aliases_of("alice")
    r = _post(root_client, "alice", [("charlie", "the barkeep", False), (target, label, False)], 1)
    assert r.status_code == 200
    assert message in r.content.decode()
    assert aliases_of("alice") == before  # the whole table is one transaction
    assert not AliasChange.objects.exists()


def test_admin_alias_unknown_target_refused(root_client) -> None:
    r = _post(root_client, "alice", [("nobody", "a ghost", False)], 0)
    assert r.status_code == 200
    assert "Select a valid choice" in r.content.decode()
    assert not AliasChange.objects.exists()


def test_admin_alias_label_with_other_entity_id_warns(root_client) -> None:
    r = _post(root_client, "alice", [("bob", "the friend of charlie", False)], 1)
    assert r.status_code == 302
    r = root_client.get(r.url)
    assert "contains the system id &#x27;charlie&#x27;" in r.content.decode()


def test_admin_buffer_entry_shows_rendered_line_beside_raw_intent(root_client) -> None:
    done = remember(
        "alice",
        {
            "type": "action",
            "originalText": "x",
            "description": "opened the wooden chest",
            "actorId": "bob",
            "targetIds": [],
        },
        timestamp="2026-07-06T12:03:00.000Z",
        outcome={"isValid": True, "reason": "r"},
    )
    r = root_client.get("/admin/memory/bufferentry/?owner_id__exact=alice")
    assert (
        "[12:03:00 PM] the hooded figure opened the wooden chest (Outcome: Succeeded)"
        in r.content.decode()
    )
    r = root_client.get(f"/admin/memory/bufferentry/{done.entry.uid}/change/")
    body = r.content.decode()
    assert "the hooded figure opened the wooden chest" in body
    assert "&quot;actorId&quot;:&quot;bob&quot;" in body


def test_admin_history_and_audit_pages_are_read_only(root_client) -> None:
    AliasChange.objects.create(
        viewer_id="alice", target_id="bob", before="x", after="the hooded figure"
    )
    for url in ("/admin/memory/aliaschange/", "/admin/memory/auditlog/"):
        r = root_client.get(url)
        assert r.status_code == 200
        assert f'href="{url}add/"' not in r.content.decode()  # no "Add" button
    assert "the hooded figure" in root_client.get("/admin/memory/aliaschange/").content.decode()
    assert root_client.get("/admin/memory/aliaschange/add/").status_code == 403


def test_admin_buffer_search_finds_a_row_by_its_id_and_every_row_of_an_owner(root_client):
    """The search box takes a row's id or an owner's id, matched as the store keeps them: an
    owner's rows alone, newest first; a row by its id; both where a row's id is an owner's."""
    intent = {
        "type": "action",
        "originalText": "x",
        "description": "waved",
        "actorId": "bob",
        "targetIds": [],
    }
    first = remember("alice", intent, timestamp="2026-07-06T12:00:00.000Z", entry_id="m-1").entry
    later = remember("alice", intent, timestamp="2026-07-06T12:05:00.000Z", entry_id="m-2").entry
    named = remember("bob", intent, timestamp="2026-07-06T12:01:00.000Z", entry_id="alice").entry
    other = remember("bob", intent, timestamp="2026-07-06T12:02:00.000Z", entry_id="m-3").entry
    rows = {first.uid: "first", later.uid: "later", named.uid: "named", other.uid: "other"}

    def listed(term: str) -> list[str]:
        body = root_client.get(f"/admin/memory/bufferentry/?q={term}").content.decode()
        places = {
            body.find(f"/admin/memory/bufferentry/{uid}/change/"): w for uid, w in rows.items()
        }
        return [w for at, w in sorted(places.items()) if at >= 0]

    assert listed("m-3") == ["other"]
    assert listed("bob") == ["other", "named"]  # newest first
    assert listed("alice") == ["later", "named", "first"]  # the row named alice, and hers
    assert listed("ALICE") == []
    assert listed("nobody") == []
    assert listed("") == ["later", "other", "named", "first"]


def test_admin_buffer_list_reads_its_rows_owners_once_a_page(root_client):
    """Each row shows the line its owner reads: the page's owners are read in one statement,
    however many rows and owners it shows."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    intent = {"type": "action", "originalText": "x", "description": "waved", "targetIds": []}

    def statements() -> int:
        with CaptureQueriesContext(connection) as captured:
            body = root_client.get("/admin/memory/bufferentry/").content.decode()
        assert "undeliverable" not in body
        return len(captured.captured_queries)

    remember("alice", {**intent, "actorId": "alice"}, timestamp="2026-07-06T12:00:00.000Z")
    one = statements()
    for n, owner in enumerate(["bob", "charlie", "alice", "bob"]):
        remember(owner, {**intent, "actorId": owner}, timestamp=f"2026-07-06T12:0{n + 1}:00.000Z")
    assert statements() == one
