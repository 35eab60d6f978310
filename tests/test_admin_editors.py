"""The admin door for the roles, not only superusers: the demo login (a staff account, made by
`ensure_login` as `make run` makes it) edits aliases in /admin/ through the roles' permissions;
entity pages link to the inspector and back; alias history is visible there."""

from __future__ import annotations

import json

import pytest

from memory.models import (
    AliasChange,
    Save,
    WorldObject,
)

pytestmark = pytest.mark.usefixtures("cast")


def change_url(entity_id: str) -> str:
    """The admin keys an entity by its integer uid (ids repeat across saves)."""
    from memory.models import WorldObject

    return f"/admin/memory/entity/{WorldObject.objects.get(id=entity_id).uid}/change/"


def _post_aliases(client, viewer: str, rows: list[tuple[str, str]]):
    data = {
        "aliases-TOTAL_FORMS": str(len(rows)),
        "aliases-INITIAL_FORMS": str(len(rows)),
        "aliases-MIN_NUM_FORMS": "0",
        "aliases-MAX_NUM_FORMS": "1000",
    }
    for i, (target, label) in enumerate(rows):
        data[f"aliases-{i}-target"] = target
        data[f"aliases-{i}-label"] = label
    return client.post(change_url(viewer), data)


def test_admin_index_lists_entities_for_the_demo_login(designer_client) -> None:
    body = designer_client.get("/admin/").content.decode()
    assert "You don’t have permission" not in body
    assert 'href="/admin/memory/entity/"' in body
    assert designer_client.get("/admin/memory/entity/").status_code == 200


def test_demo_login_edits_aliases_in_admin_without_superuser(designer, designer_client) -> None:
    page = designer_client.get(change_url("alice"))
    assert page.status_code == 200
    assert 'name="aliases-0-label" value="the hooded figure"' in page.content.decode()
    r = _post_aliases(
        designer_client, "alice", [("bob", "the stranger"), ("charlie", "the bartender")]
    )
    assert r.status_code == 302
    assert json.loads(WorldObject.objects.get(id="alice").aliases_json) == [
        ["bob", "the stranger"],
        ["charlie", "the bartender"],
    ]
    change = AliasChange.objects.get()
    assert (change.target_id, change.before, change.after, change.changed_by, change.source) == (
        "bob",
        "the hooded figure",
        "the stranger",
        designer,
        "admin",
    )


def test_admin_entity_page_links_to_inspector_and_history(designer_client) -> None:
    body = designer_client.get(change_url("alice")).content.decode()
    assert (
        '<a href="/saves/cast/viewers/alice/" class="viewsitelink">Open in the inspector</a>'
        in body
    )
    # The history of this save's alice: ids repeat across saves.
    history = f"/admin/memory/aliaschange/?game_save__id__exact={Save.objects.get(name='cast').pk}"
    assert f'href="{history}&amp;viewer_id=alice"' in body
    listing = designer_client.get(f"{history}&viewer_id=alice")
    assert listing.status_code == 200


def test_alias_history_visible_in_admin_after_an_edit(designer_client) -> None:
    _post_aliases(designer_client, "alice", [("bob", "the stranger"), ("charlie", "the bartender")])
    body = designer_client.get("/admin/memory/aliaschange/?viewer_id=alice").content.decode()
    assert "the stranger" in body and "the hooded figure" in body
    entity_page = designer_client.get(change_url("alice")).content.decode()
    assert "<td>the hooded figure</td><td>the stranger</td>" in entity_page


def test_viewer_page_links_to_admin_for_staff_only(designer_client, editor) -> None:
    body = designer_client.get("/saves/cast/viewers/alice/").content.decode()
    assert f'<a class="admin-link" href="{change_url("alice")}">Admin page</a>' in body
    designer_client.force_login(editor)
    body = designer_client.get("/saves/cast/viewers/alice/").content.decode()
    assert "/admin/memory/entity/" not in body


def test_leak_acceptances_are_listed_read_only_for_the_demo_login(designer_client) -> None:
    from memory.models import LeakAcceptance

    LeakAcceptance.objects.create(
        viewer_id="alice", section="recent", kind="system_id", text="bob", reason="a test fixture"
    )
    page = designer_client.get("/admin/memory/leakacceptance/")
    assert page.status_code == 200
    assert "a test fixture" in page.content.decode()
    assert designer_client.get("/admin/memory/leakacceptance/add/").status_code == 403
