"""Long-term faces over the database (issue 4): the demo world's faces exactly as
memory/demo/README.md describes them, the seed's counterexample through load_world, get-by-id
notes, undeliverable bodies, rows_visited against the queries' real row counts, the command."""

from __future__ import annotations

import json
import re
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection
from django.test.utils import CaptureQueriesContext

from memory.active_save import use
from memory.engine.errors import NotFound
from memory.engine.knowledge import get_viewer
from memory.engine.longterm.reader import (
    get_long_term_entry,
    index_lines,
    resolve_slug,
    search_long_term,
    viewer_faces,
)
from memory.models import LedgerEntry, Save
from memory.worlds.demo import load_demo
from memory.worlds.omnia_import import import_omnia
from memory.worlds.scenario import load_world

INSPECTOR = "5b0e6c1a-3f2d-4e8b-9a71-c4d2e8f90a13"
SIGNAL_NIGHTS = "abs-tobiah-signal-nights"


def _summary(viewer_id: str, **kwargs) -> dict:
    answer = viewer_faces(viewer_id, **kwargs)
    return {
        "default": [item.id for item in answer.default],
        "shadowed": answer.shadowed,
        "superseded": answer.superseded,
        "withheld": answer.withheld,
        "undeliverable": answer.undeliverable,
    }


# --- the demo world, viewer by viewer ---------------------------------------------------------


def test_maren_home_shadows_canon_saltmere(demo):
    assert _summary("npc-maren") == {
        "default": [
            "ltm-maren-01",
            "ltm-maren-02",
            "canon-customs",
            "canon-lighthouse",
            "canon-tides",
            "lore-brandy",
            "lore-gullwing",
            "lore-lighthouse",
            "lore-signal",
        ],
        "shadowed": {"canon-saltmere": "ltm-maren-01"},
        "superseded": {},
        "withheld": [],
        "undeliverable": {},
    }


def test_tobiah_withheld_and_superseded_carriers_shadow_nothing(demo):
    # lore-brandy stays: ltm-tobiah-02 "Brandy Route" is withheld. lore-signal stays:
    # ltm-tobiah-01 "The Signal" was rolled up into Signal Nights (the seed's counterexample).
    assert _summary("npc-tobiah") == {
        "default": [
            SIGNAL_NIGHTS,
            "ltm-tobiah-03",
            "lore-brandy",
            "lore-lighthouse",
            "lore-signal",
        ],
        "shadowed": {"lore-gullwing": "ltm-tobiah-03"},
        "superseded": {"ltm-tobiah-01": SIGNAL_NIGHTS},
        "withheld": ["ltm-tobiah-02"],
        "undeliverable": {},
    }


def test_inspector_draft_name_does_not_shadow_but_slug_only_entry_does(demo):
    assert _summary(INSPECTOR) == {
        "default": [
            "ltm-insp-01",
            "ltm-insp-02",
            "canon-customs",
            "canon-lighthouse",
            "canon-saltmere",
        ],
        "shadowed": {"canon-tides": "ltm-insp-02"},
        "superseded": {},
        "withheld": [],
        "undeliverable": {},
    }


def test_oswin_two_carriers_lowest_id_wins_across_both_layers(demo):
    assert _summary("npc-oswin") == {
        "default": [
            "ltm-oswin-01",
            "ltm-oswin-02",
            "lore-brandy",
            "lore-gullwing",
            "lore-signal",
            "canon-customs",
            "canon-saltmere",
            "canon-tides",
        ],
        "shadowed": {"canon-lighthouse": "ltm-oswin-01", "lore-lighthouse": "ltm-oswin-01"},
        "superseded": {},
        "withheld": [],
        "undeliverable": {},
    }


def test_sable_and_pip(demo):
    assert _summary("npc-sable")["shadowed"] == {"lore-brandy": "ltm-sable-01"}
    # Pip has no home entries: no write-home names, so nothing is shadowed.
    assert _summary("npc-pip") == {
        "default": ["canon-customs", "canon-lighthouse", "canon-saltmere", "canon-tides"],
        "shadowed": {},
        "superseded": {},
        "withheld": [],
        "undeliverable": {},
    }


def test_include_shadowed_lists_every_deliverable_entry_once_with_tags(demo):
    answer = viewer_faces("npc-tobiah", include_shadowed=True)
    assert [(item.id, item.tags) for item in answer.items] == [
        (SIGNAL_NIGHTS, []),
        ("ltm-tobiah-01", ["[superseded]"]),
        ("ltm-tobiah-03", []),
        ("lore-brandy", []),
        ("lore-gullwing", ["[shadowed]"]),
        ("lore-lighthouse", []),
        ("lore-signal", []),
    ]
    # The default answer's items are the default face, untagged.
    plain = viewer_faces("npc-tobiah")
    assert [item.id for item in plain.items] == [item.id for item in plain.default]
    assert all(item.tags == [] for item in plain.items)


def test_bodies_are_hydrated_for_the_viewer_never_ids(demo):
    answer = viewer_faces("npc-maren", include_shadowed=True)
    bodies = {item.id: item.body for item in answer.items}
    # Maren knows Tobiah as "the one-eyed sailor"? Whatever her alias is, no id survives.
    assert all("entity@" not in body and "npc-" not in body for body in bodies.values())
    assert bodies["canon-saltmere"].startswith("A fishing harbor of grey stone")


def test_index_lines_default_face_titles_and_bodies(demo):
    lines = index_lines(get_viewer(INSPECTOR))
    assert lines == [
        "- customs-visits: Visits logged this week: the quay twice, the lighthouse once.",
        "- tide-tables: Boats that land at low water are boats that do not want to be seen.",
        "- Customs House: Every cargo landed on the quay must be declared at the customs house "
        "before noon.",
        "- The Lighthouse: The lamp is lit at dusk and put out at dawn by the keeper; ships steer "
        "by it.",
        "- Saltmere Harbor: A fishing harbor of grey stone on a cold northern coast; the "
        "breakwater ends at the lighthouse.",
    ]


def test_search_and_slug_resolution(demo):
    assert [i.id for i in search_long_term("npc-tobiah", "signal")] == [
        SIGNAL_NIGHTS,
        "lore-signal",
    ]
    assert [i.id for i in search_long_term("npc-tobiah", "signal", include_shadowed=True)] == [
        SIGNAL_NIGHTS,
        "ltm-tobiah-01",
        "lore-signal",
    ]
    # Search reads the hydrated body: the stored id npc-sable is not findable.
    assert search_long_term("npc-tobiah", "npc-sable") == []
    assert resolve_slug("npc-tobiah", "lore/the-gullwing") is None
    shown = resolve_slug("npc-tobiah", "lore/the-gullwing", include_shadowed=True)
    assert shown is not None and shown.tags == ["[shadowed]"]
    assert resolve_slug("npc-tobiah", "tobiah/the-gullwing").id == "ltm-tobiah-03"


def test_get_by_id_always_delivers_with_notes_and_provenance(demo):
    shadowed = get_long_term_entry("npc-tobiah", "lore-gullwing")
    assert shadowed.notes == [
        "[shadowed] the write home's entry ltm-tobiah-03 carries this entry's name; "
        "delivered by id as evidence"
    ]
    assert shadowed.item.body.startswith("A fast black-sailed lugger")
    member = get_long_term_entry("npc-tobiah", "ltm-tobiah-01")
    assert member.notes == [
        "[superseded] consolidated into abs-tobiah-signal-nights; delivered by id as evidence"
    ]
    assert member.rollup == SIGNAL_NIGHTS and member.members == []
    withheld = get_long_term_entry("npc-tobiah", "ltm-tobiah-02")
    assert withheld.notes == ["[withheld] retracted or flagged; delivered by id as evidence"]
    assert withheld.item.body == "Which cellar the crates really go to. Not to be said aloud."
    rollup = get_long_term_entry("npc-tobiah", SIGNAL_NIGHTS)
    assert rollup.notes == [] and rollup.rollup is None
    assert rollup.members == ["ltm-tobiah-01", "m-b11-tobiah", "m-d01-tobiah"]


def test_unknown_viewer_and_entry_are_not_found(demo):
    with pytest.raises(NotFound):
        viewer_faces("nobody")
    with pytest.raises(NotFound):
        get_long_term_entry("npc-tobiah", "canon-saltmere")  # Tobiah does not read harbor-canon
    with pytest.raises(NotFound):
        get_long_term_entry("npc-tobiah", "no-such-entry")


# --- the seed's counterexample, end to end ------------------------------------------------------


def _scenario() -> dict:
    return {
        "id": "cx-world",
        "name": "Counterexample",
        "startTime": "2026-07-06T08:00:00.000Z",
        "world": {"attributes": []},
        "locations": [{"id": "cx-room", "attributes": []}],
        "layers": [
            {
                "id": "cx-lore",
                "entries": [
                    {"id": "lore-1", "slug": "lore/dragons", "name": "Dragons", "body": "Lore."},
                    {"id": "lore-2", "slug": "lore/ale", "name": "Ale", "body": "Brewed here."},
                ],
            }
        ],
        "entities": [
            {
                "id": "cx-alice",
                "locationId": "cx-room",
                "attributes": [],
                "layers": ["cx-lore"],
                "memories": [
                    {"id": "h-1", "slug": "alice/dragons", "name": "Dragons", "body": "Mine."},
                    {"id": "h-2", "slug": "alice/ale", "name": "Ale", "body": "Too sweet."},
                ],
            }
        ],
        "abstractions": [
            {
                "id": "r-1",
                "owner": "cx-alice",
                "members": ["h-1"],
                "name": "Old beasts",
                "slug": "alice/old-beasts",
                "body": "All I know of the old beasts.",
            }
        ],
    }


@pytest.mark.django_db
def test_seed_counterexample_rollup_member_does_not_shadow_its_layer_namesake(activate_save):
    activate_save(load_world(_scenario()).save)
    assert _summary("cx-alice") == {
        "default": ["h-2", "r-1", "lore-1"],
        "shadowed": {"lore-2": "h-2"},
        "superseded": {"h-1": "r-1"},
        "withheld": [],
        "undeliverable": {},
    }
    # The write home's answer (h-1) and its namesake (lore-1) never vanish together.
    every = [item.id for item in viewer_faces("cx-alice", include_shadowed=True).items]
    assert every == ["h-1", "h-2", "r-1", "lore-1", "lore-2"]


# --- undeliverable bodies ------------------------------------------------------------------------


def _put(entry_id: str, content: str, *, name: str, scope: str = "home:cx-alice") -> None:
    LedgerEntry.objects.create(
        id=entry_id,
        owner_id="cx-alice" if scope.startswith("home:") else None,
        timestamp="2026-07-06T09:00:00.000Z",
        content=content,
        importance=5,
        scope_id=scope,
        slug=f"x/{entry_id}",
        name=name,
        created_at=1,
    )


@pytest.mark.django_db
def test_undeliverable_bodies_are_disclosed_and_shadow_nothing(activate_save):
    activate_save(load_world(_scenario()).save)
    # hydrate renders any string, so the probe refuses what it would have to invent:
    # a tag naming no entity, and an empty body.
    _put("h-0", "entity@[somebody] owes me", name="Ale")
    _put("h-3", "   ", name="Blank")
    answer = viewer_faces("cx-alice")
    assert answer.undeliverable == {
        "h-0": "a tag names no entity (entity@ without an id)",
        "h-3": "the body is empty",
    }
    # h-0 "Ale" has the lowest id but is off the default face, so h-2 carries the name.
    assert answer.shadowed == {"lore-2": "h-2"}
    assert [i.id for i in answer.default] == ["h-2", "r-1", "lore-1"]
    assert "h-0" not in [i.id for i in viewer_faces("cx-alice", include_shadowed=True).items]
    got = get_long_term_entry("cx-alice", "h-0")
    assert got.item.body == ""
    assert got.notes == [
        "[undeliverable] the body cannot be rendered: a tag names no entity (entity@ without an id)"
    ]


# --- rows_visited is the rows the queries really returned ---------------------------------------


_DECLARE = re.compile(r'^DECLARE "[^"]+" NO SCROLL CURSOR (?:WITH HOLD )?FOR ')


def _rows_returned(captured: list[dict]) -> int:
    total = 0
    with connection.cursor() as cursor:
        for query in captured:
            # PostgreSQL's iterator() reads through a named server-side cursor: re-run its SELECT.
            sql = _DECLARE.sub("", query["sql"])
            if not sql.lstrip().upper().startswith("SELECT"):
                continue
            cursor.execute(sql)
            total += len(cursor.fetchall())
    return total


@pytest.mark.django_db
@pytest.mark.parametrize("viewer_id", ["npc-tobiah", "npc-maren", "npc-pip", INSPECTOR])
def test_rows_visited_equals_rows_returned_by_the_queries(viewer_id):
    load_demo()
    with use(Save.objects.get(name="demo")), CaptureQueriesContext(connection) as ctx:
        answer = viewer_faces(viewer_id)
    assert answer.rows_visited == _rows_returned(ctx.captured_queries)


def test_rows_visited_tobiah_exact(demo):
    # viewer 1 + subscriptions 1 + entries (4 home incl. the rollup, 4 lore) + 1 ledger edge.
    assert viewer_faces("npc-tobiah").rows_visited == 11


# --- the command ----------------------------------------------------------------------------------


def test_faces_command_json_exactly(demo):
    out = StringIO()
    call_command("faces", "npc-tobiah", "--json", stdout=out)
    assert json.loads(out.getvalue()) == {
        "default": [
            SIGNAL_NIGHTS,
            "ltm-tobiah-03",
            "lore-brandy",
            "lore-lighthouse",
            "lore-signal",
        ],
        "shadowed": {"lore-gullwing": "ltm-tobiah-03"},
        "superseded": {"ltm-tobiah-01": SIGNAL_NIGHTS},
        "rows_visited": 11,
        "name_warnings": [],
    }


def test_faces_command_text_shows_tags_and_notes(demo):
    out = StringIO()
    call_command("faces", "npc-tobiah", "--include-shadowed", stdout=out)
    text = out.getvalue()
    assert "lore-gullwing  [layer:smugglers-lore] The Gullwing [shadowed]" in text
    assert "[superseded] consolidated into abs-tobiah-signal-nights" in text
    assert "withheld: ltm-tobiah-02" in text


def test_faces_command_unknown_viewer_exits_2(demo):
    with pytest.raises(CommandError) as info:
        call_command("faces", "nobody", "--json")
    assert info.value.returncode == 2
    assert str(info.value) == "no entity with id 'nobody'"


# --- omnia's ledger rows land in their owner's home face ------------------------------------------


@pytest.mark.django_db
def test_omnia_ledger_rows_on_their_owners_home_face(fixtures_dir, activate_save):
    activate_save(import_omnia(fixtures_dir / "omnia-head-tavern.sqlite").save)
    owners = dict(LedgerEntry.objects.values_list("id", "owner_id"))
    assert owners  # the fixture holds ledger rows
    for entry_id, owner in owners.items():
        answer = viewer_faces(owner)
        assert entry_id in [item.id for item in answer.default]
        item = next(i for i in answer.default if i.id == entry_id)
        assert item.scope == f"home:{owner}"
        assert "entity@" not in item.body
    # The prompt section names no ids: an unnamed omnia row shows its body alone.
    for owner in set(owners.values()):
        for line in index_lines(owner):
            assert not any(entry_id in line for entry_id in owners)


def test_a_read_restores_the_garbage_collector(demo):
    import gc

    assert gc.isenabled()
    viewer_faces("npc-maren")
    assert gc.isenabled()
    gc.disable()
    try:
        viewer_faces("npc-maren")
        assert not gc.isenabled()  # a caller's own choice is left alone
    finally:
        gc.enable()
