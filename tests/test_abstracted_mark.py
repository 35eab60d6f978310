"""Every absorbed member carries the per-row "abstracted into" mark, ledger entries as well as
buffer rows (issue 13, item 4; seed 003 rule 10: abstract() writes the rollup, the mark on
every absorbed row and the edges in one transaction), shown where the members are shown."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from django.core.management import call_command

from memory.engine.abstract import AbstractConflict, abstract
from memory.engine.shards import generation_of
from memory.models import AbstractionEdge, BufferEntry, LedgerEntry

START = "2026-07-06T12:00:00.000Z"


@pytest.fixture
def harbor(tmp_path: Path, db, activate_save) -> None:
    """Mara's harbor, loaded by the command into the save "harbor", active."""
    doc = {
        "id": "harbor",
        "name": "Harbor",
        "startTime": START,
        "locations": [{"id": "quay", "name": "The quay"}],
        "entities": [
            {
                "id": "mara",
                "locationId": "quay",
                "attributes": [{"name": "name", "value": "Mara", "visibility": "PUBLIC"}],
                "memories": [
                    {"id": "mara-1", "slug": "notes/lamp", "name": "Lamp", "body": "The lamp."},
                    {"id": "mara-2", "slug": "notes/tide", "name": "Tide", "body": "The tide."},
                ],
                "initialMemories": [
                    {
                        "id": "m-1",
                        "timestamp": START,
                        "locationId": "quay",
                        "intent": {
                            "type": "monologue",
                            "content": "The lamp needs oil.",
                            "actorId": "mara",
                            "targetIds": [],
                            "modifiers": [],
                        },
                    }
                ],
            }
        ],
        "abstractions": [
            {
                "id": "rollup-1",
                "owner": "mara",
                "members": ["mara-1", "m-1"],
                "name": "The lamp",
                "body": "Mara keeps the lamp.",
            }
        ],
    }
    path = tmp_path / "harbor.json"
    path.write_text(json.dumps(doc))
    call_command("load_world", str(path), stdout=io.StringIO())
    activate_save("harbor")


def test_ledger_and_buffer_members_both_carry_the_mark(harbor):
    assert LedgerEntry.objects.get(id="mara-1").abstracted_into == "rollup-1"
    assert BufferEntry.objects.get(id="m-1").abstracted_into == "rollup-1"
    assert LedgerEntry.objects.get(id="mara-2").abstracted_into is None
    assert sorted(AbstractionEdge.objects.values_list("member_id", "member_kind", "rollup_id")) == [
        ("m-1", "buffer", "rollup-1"),
        ("mara-1", "ledger", "rollup-1"),
    ]


def test_a_marked_ledger_member_is_refused_even_without_its_edge(harbor):
    AbstractionEdge.objects.filter(member_id="mara-1").delete()  # the mark alone still holds
    with pytest.raises(AbstractConflict, match="already absorbed into 'rollup-1'"):
        abstract(
            "mara",
            ["mara-1"],
            name="Again",
            body="b",
            expected_generation=generation_of("mara"),
        )
    assert not LedgerEntry.objects.filter(name="Again").exists()


def test_the_member_listing_and_the_entry_pages_show_the_mark(harbor, client, django_user_model):
    client.force_login(django_user_model.objects.create_user("reader", password="pw"))
    answer = client.get("/api/saves/harbor/viewers/mara/long-term/rollup-1").json()
    assert answer["members"] == [
        {
            "id": "m-1",
            "title": "The lamp needs oil.",
            "kind": "buffer",
            "abstracted_into": "rollup-1",
        },
        {"id": "mara-1", "title": "Lamp", "kind": "ledger", "abstracted_into": "rollup-1"},
    ]
    assert answer["abstracted_into"] is None
    member = client.get("/api/saves/harbor/viewers/mara/long-term/mara-1").json()
    assert (member["abstracted_into"], member["rollup"]["id"]) == ("rollup-1", "rollup-1")
    page = client.get("/saves/harbor/viewers/mara/entries/rollup-1/").content.decode()
    # Members by title with their kind; a member whose own mark is missing would say so.
    assert (
        '/viewers/mara/entries/mara-1/">Lamp</a> <span class="muted small">ledger</span>'
    ) in page
    assert (
        '/viewers/mara/entries/m-1/">The lamp needs oil.</a> <span class="muted small">buffer</span>'
    ) in page
    assert "mark missing" not in page
    page = client.get("/saves/harbor/viewers/mara/entries/mara-1/").content.decode()
    assert (
        '<dt>rolled up into</dt><dd><a href="/saves/harbor/viewers/mara/entries/rollup-1/">“The lamp”</a></dd>'
    ) in page
