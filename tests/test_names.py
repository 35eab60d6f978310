"""Long-term names are trimmed at the door that stores them (issue 13, item 7; seed 004: exact
equality is safe because "the frontmatter parse already trimmed"). Entries stored before keep
their exact name and the faces warn when two read as one name; an empty committed name falls
back to the slug rule, as a missing one does."""

from __future__ import annotations

import io
import json
from pathlib import Path

from django.core.management import call_command

from memory.engine.scopes import home_scope, layer_scope
from memory.models import LedgerEntry

START = "2026-07-06T12:00:00.000Z"


def scenario(tmp_path: Path, home: list[dict], layer: list[dict], **extra) -> Path:
    doc = {
        "id": "harbor",
        "name": "Harbor",
        "startTime": START,
        "locations": [{"id": "quay", "name": "The quay"}],
        "layers": [{"id": "canon", "title": "World canon", "entries": layer}],
        "entities": [
            {
                "id": "mara",
                "locationId": "quay",
                "attributes": [{"name": "name", "value": "Mara", "visibility": "PUBLIC"}],
                "layers": ["canon"],
                "memories": home,
            }
        ],
        **extra,
    }
    path = tmp_path / "harbor.json"
    path.write_text(json.dumps(doc))
    return path


def entry(id_: str, slug: str, body: str, name: str | None = None) -> dict:
    raw = {"id": id_, "slug": slug, "body": body}
    if name is not None:
        raw["name"] = name
    return raw


def faces(viewer: str, *flags: str) -> str:
    out = io.StringIO()
    call_command("faces", viewer, *flags, stdout=out)
    return out.getvalue()


def prompt(viewer: str) -> str:
    out = io.StringIO()
    call_command("render_prompt", viewer, stdout=out)
    return out.getvalue()


def test_a_name_stored_with_spaces_is_trimmed_and_shadows_the_layer_entry(tmp_path, activate_save):
    path = scenario(
        tmp_path,
        home=[entry("mara-1", "notes/lighthouse", "Mara keeps the lamp.", "The Lighthouse ")],
        layer=[entry("canon-1", "places/lighthouse", "A tower on the point.", "The Lighthouse")],
    )
    call_command("load_world", str(path), stdout=io.StringIO())
    activate_save("harbor")
    assert LedgerEntry.objects.get(id="mara-1").name == "The Lighthouse"
    assert json.loads(faces("mara", "--json")) == {
        "default": ["mara-1"],
        "shadowed": {"canon-1": "mara-1"},
        "superseded": {},
        "rows_visited": 4,
        "name_warnings": [],
    }
    text = prompt("mara")
    assert "- The Lighthouse: Mara keeps the lamp." in text
    assert text.count("The Lighthouse") == 1


def test_an_empty_or_blank_name_falls_back_to_the_slug_rule(tmp_path, activate_save):
    path = scenario(
        tmp_path,
        home=[
            entry("mara-1", "notes/lamp", "Mara keeps the lamp.", ""),
            entry("mara-2", "notes/tide", "The tide turns at six.", "   "),
            entry("mara-3", "notes/boat", "The boat leaks.", "  The Boat\t"),
        ],
        layer=[entry("canon-1", "places/lamp", "The lamp is old.", "lamp")],
    )
    call_command("load_world", str(path), stdout=io.StringIO())
    activate_save("harbor")
    assert dict(LedgerEntry.objects.filter(owner_id="mara").values_list("id", "name")) == {
        "mara-1": None,
        "mara-2": None,
        "mara-3": "The Boat",
    }
    text = faces("mara", "--include-shadowed")
    assert "  mara-1  [home:mara] lamp\n" in text
    assert "  mara-2  [home:mara] tide\n" in text
    assert "  mara-3  [home:mara] The Boat\n" in text
    # "lamp", the slug rule's name of the home entry, shadows the layer's entry named "lamp".
    assert "  canon-1  [layer:canon] lamp [shadowed]\n" in text


def test_a_rollup_name_is_trimmed_at_the_door(tmp_path, activate_save):
    path = scenario(
        tmp_path,
        home=[entry("mara-1", "notes/lamp", "Mara keeps the lamp.", "Lamp")],
        layer=[],
        abstractions=[
            {
                "id": "rollup-1",
                "owner": "mara",
                "members": ["mara-1"],
                "name": "  What Mara knows ",
                "body": "Mara keeps the lamp lit.",
            }
        ],
    )
    call_command("load_world", str(path), stdout=io.StringIO())
    activate_save("harbor")
    assert LedgerEntry.objects.get(id="rollup-1").name == "What Mara knows"


def test_entries_stored_before_trimming_are_warned_about_not_merged(tmp_path, activate_save):
    path = scenario(
        tmp_path,
        home=[entry("mara-1", "notes/tide", "The tide turns at six.", "Tide")],
        layer=[entry("canon-1", "places/lighthouse", "A tower on the point.", "The Lighthouse")],
    )
    call_command("load_world", str(path), stdout=io.StringIO())
    activate_save("harbor")
    # Written around the doors, as a store from before the trim would hold it.
    LedgerEntry.objects.create(
        id="mara-old",
        owner_id="mara",
        timestamp=START,
        content="Mara keeps the lamp.",
        importance=5,
        scope_id=home_scope("mara"),
        slug="notes/lighthouse",
        name="The Lighthouse ",
        created_at=1,
    )
    assert layer_scope("canon") == "layer:canon"
    answer = json.loads(faces("mara", "--json"))
    # Exact equality still decides shadowing: nothing is shadowed, both stay on the face...
    assert (answer["default"], answer["shadowed"]) == (["mara-1", "mara-old", "canon-1"], {})
    # ...and the faces say why the prompt shows one name twice.
    assert answer["name_warnings"] == [
        {
            "name": "The Lighthouse",
            "entries": [
                {"id": "canon-1", "name": "The Lighthouse"},
                {"id": "mara-old", "name": "The Lighthouse "},
            ],
        }
    ]
    assert (
        "  warning: same name after trimming, 'The Lighthouse': canon-1 'The Lighthouse', "
        "mara-old 'The Lighthouse ' (stored before names were trimmed; only the exact name "
        "shadows)\n"
    ) in faces("mara")


def test_the_faces_panel_and_api_show_the_warning(
    tmp_path, activate_save, client, django_user_model
):
    path = scenario(
        tmp_path,
        home=[entry("mara-1", "notes/lighthouse", "Mara keeps the lamp.", "The Lighthouse")],
        layer=[],
    )
    call_command("load_world", str(path), stdout=io.StringIO())
    activate_save("harbor")
    LedgerEntry.objects.create(
        id="mara-old",
        owner_id="mara",
        timestamp=START,
        content="An old note.",
        importance=5,
        scope_id=home_scope("mara"),
        slug="notes/old",
        name=" The Lighthouse",
        created_at=1,
    )
    client.force_login(django_user_model.objects.create_user("reader", password="pw"))
    page = client.get("/saves/harbor/viewers/mara/faces/").content.decode()
    assert (
        "Same name after trimming, “The Lighthouse”: <code>mara-1</code> “The Lighthouse”, "
        "<code>mara-old</code> “ The Lighthouse”."
    ) in page
    assert client.get("/api/saves/harbor/viewers/mara/faces").json()["name_warnings"] == [
        {
            "name": "The Lighthouse",
            "entries": [
                {"id": "mara-1", "name": "The Lighthouse"},
                {"id": "mara-old", "name": " The Lighthouse"},
            ],
        }
    ]


def test_shadow_key_of_a_stored_empty_or_blank_name_is_the_slug():
    from memory.engine.longterm.shadowing import EntryHeader, shadow_key_of

    for name in ("", "  ", None):
        assert shadow_key_of(EntryHeader("x", "home:m", "notes/lamp", name)) == "lamp"
    assert shadow_key_of(EntryHeader("x", "home:m", "notes/lamp", " Lamp ")) == " Lamp "
