"""The admin for people (issue 28 item 6): names in the entity list and its search, alias
targets chosen by name, the alias history as the History view, the site titled for this
product, and a saved-with-a-warning label said once (never a warning beside a green saved)."""

from __future__ import annotations

import json

import pytest
from django.contrib.messages import get_messages

from memory.models import AliasChange, WorldObject
from tests.test_admin import _post, change_url

pytestmark = pytest.mark.usefixtures("cast")
LIST = "/admin/memory/entity/"


def test_entity_list_shows_names_and_searches_by_name(root_client) -> None:
    body = root_client.get(LIST).content.decode()
    uid = WorldObject.objects.get(id="bob").uid
    assert '<th scope="col" class="sortable column-name">' in body
    assert (  # bob by his true name, the link to his page; the id beside it
        f'<tr><th class="field-name"><a href="/admin/memory/entity/{uid}/change/">Gareth</a>'
        '</th><td class="field-id">bob</td>'
    ) in body
    found = root_client.get(LIST, {"q": "gare"}).content.decode()
    assert ">Gareth</a>" in found and ">Alice</a>" not in found
    by_id = root_client.get(LIST, {"q": "charlie"}).content.decode()
    assert ">Charlie</a>" in by_id and ">Gareth</a>" not in by_id
    assert "Search by name or id." in body


def test_site_is_titled_for_the_product(root_client) -> None:
    body = root_client.get("/admin/").content.decode()
    assert "Omnia Memory Inspector — admin" in body
    assert "People, memories and records" in body
    assert "Django administration" not in body


def test_alias_targets_are_chosen_by_name(root_client) -> None:
    body = root_client.get(change_url("alice")).content.decode()
    assert '<option value="bob" selected>Gareth (bob)</option>' in body
    assert '<option value="charlie">Charlie (charlie)</option>' in body
    assert "<h2>Aliases — what Alice calls the others</h2>" in body


def test_history_view_is_the_alias_history(root_client) -> None:
    _post(
        root_client,
        "alice",
        [("bob", "the <b>stranger</b>", False), ("charlie", "the bartender", False)],
        2,
    )
    uid = WorldObject.objects.get(id="alice").uid
    body = root_client.get(f"/admin/memory/entity/{uid}/history/").content.decode()
    assert "<title>Alias history: Alice | Omnia Memory Inspector admin</title>" in body
    assert (
        "<td>root</td><td>Gareth</td><td>“the hooded figure”</td>"
        "<td>“the &lt;b&gt;stranger&lt;/b&gt;”</td><td>admin</td>"
    ) in body
    assert AliasChange.objects.count() == 1
    empty = root_client.get(
        f"/admin/memory/entity/{WorldObject.objects.get(id='charlie').uid}/history/"
    )
    assert "No alias change recorded for Charlie." in empty.content.decode()
    missing = root_client.get("/admin/memory/entity/999999/history/")
    assert missing.status_code in (302, 404)


def test_a_label_saved_with_a_warning_says_so_once(root_client) -> None:
    r = _post(
        root_client,
        "alice",
        [("bob", "charlie's friend", False), ("charlie", "the bartender", False)],
        2,
    )
    assert r.status_code == 302
    shown = [(m.level_tag, m.message) for m in get_messages(r.wsgi_request)]
    assert shown == [
        (
            "warning",
            'Aliases of Alice saved, but check: label "charlie\'s friend" contains the system '
            "id 'charlie'.",
        )
    ]
    assert json.loads(WorldObject.objects.get(id="alice").aliases_json)[0] == [
        "bob",
        "charlie's friend",
    ]
    root_client.get(r.url)  # the page the redirect lands on shows (and uses up) the message
    clean = _post(
        root_client,
        "alice",
        [("bob", "the stranger", False), ("charlie", "the bartender", False)],
        2,
    )
    assert [(m.level_tag, m.message) for m in get_messages(clean.wsgi_request)] == [
        ("success", "Aliases of Alice saved.")
    ]
