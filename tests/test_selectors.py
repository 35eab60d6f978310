"""Every read a page makes, on the cast and on the demo world: its exact answer, and at most
the queries it takes today, so an N+1 fails here before a page gets slow.

Panel reads cost the same number of queries however big the world grows (`test_*_same_queries_
in_a_bigger_world`); the leak scan builds every viewer's prompt, so it costs a fixed number of
queries per viewer and nothing per memory or attribute."""

from __future__ import annotations

import json
from dataclasses import astuple

import pytest

from memory import services
from memory.engine.errors import NotFound
from memory.engine.knowledge import get_viewer, world_knowledge
from memory.engine.projections import run_cycle
from memory.engine.shards import shard_count
from memory.engine.write_door import remember
from memory.models import Attribute, ObjectType, WorldObject
from memory.selectors import aliases as alias_reads
from memory.selectors import buffer, entries, faces, leaks, projections, prompt_view, viewers
from memory.selectors import matrix as matrix_reads

CHEST = "[12:03:00 PM] the hooded figure opened the wooden chest (Outcome: Succeeded)"
HI = '[12:05:00 PM] the bartender spoke to you: "Hi"'
PIP_LEAK = {
    "viewer_id": "npc-pip",
    "section": "Recent memories",
    "kind": "unknown_name",
    "start": 1967,  # omnia's own lines before it (issue 30): one "hauls" is "haul"
    "end": 1978,
    "text": "Sable Quint",
    "entity_id": "npc-sable",
    "attribute_name": None,
    "reason": "npc-pip knows npc-sable only as 'the tall one in grey'",
    "likely_description": False,
}
# What the leak report adds beside the scan's own fields.
PIP_REPORTED = {
    "world_id": "harbor-town",
    **PIP_LEAK,
    "count": 1,
    "source_id": "m-a06-pip",
    "occurrences": [{"start": 1967, "end": 1978, "source_id": "m-a06-pip"}],
    "context_before": "The sailor with the eye patch whispers 'Run and tell ",
    "context_after": " the boat is in. Quick now.' to me",
    "state": "open",
    "accepted_reason": None,
    "accepted_by": None,
    "accepted_at": None,
    "viewer_name": "Pip Dunn",
    "entity_name": "Sable Quint",
    "can_alias": True,
}
ISOLDE = "5b0e6c1a-3f2d-4e8b-9a71-c4d2e8f90a13"

# The most queries each read may take; measured, and kept tight on purpose.
QUERIES = {
    "list_viewers": 1,
    "viewer_ids": 1,
    "list_worlds": 1,
    "knowledge_matrix": 3,  # objects, attributes, ACL
    "alias_rows": 3,  # the world's knowledge when not handed one; then none per row
    "buffer_page": 3,  # the page, then "is there an older / a newer one"
    "get_entry": 1,
    "alias_history": 1,
    # 12, then where the shown sessions happened: the conversations' last members' places,
    # the places' names (session_places); who took part: their latest moments (session_people)
    "sessions_panel": 15,
    "faces_view": 3,
    "face_maps": 3,
    "prompt_view": 14,  # 12 for a fresh scan, 2 to see the stored findings are behind
    "projection_status": 5,
    # The faces read, the rollup's edges, the per-row abstracted_into marks (this entry's with
    # its ledger members', its buffer members'), then the titles of the entries it names,
    # their layers, its buffer members' lines
    "long_term_entry": 10,
}
# The demo world has layers of shared lore: one more query for the layers a viewer reads.
# faces_view names what the listing leaves out (shadowed, withheld, rollups: one query) and the
# layers in words (one query); a prompt with findings reads their acceptances: one more, and
# finds the first moment each is in the prompt (issue 27): the rows holding its words (named
# by the text index, then read: one more), the viewer's rows once, then the prompt as it stood
# at the moment tried (a bounded number of moments, 12 at most).
DEMO_QUERIES = {**QUERIES, "faces_view": 6, "face_maps": 4, "prompt_view": 30}
# The leak scan reads each world's knowledge once, then builds every viewer's prompt.
CAST_LEAK_QUERIES = 24
# The report adds three reads whatever the size: acceptances, names, which ids are entities.
DEMO_LEAK_QUERIES = 63
LEAK_QUERIES_PER_NEW_VIEWER = 6


def _action(description: str, actor: str) -> dict:
    return {
        "type": "action",
        "originalText": description,
        "description": description,
        "actorId": actor,
        "targetIds": [],
    }


@pytest.fixture
def story(cast, django_user_model):
    """alice saw bob open the chest, then charlie said hi to her; folded; one alias edit."""
    remember(
        "alice",
        _action("opened the wooden chest", "bob"),
        timestamp="2026-07-06T12:03:00.000Z",
        outcome={"isValid": True, "reason": "r"},
        entry_id="m-chest",
    )
    remember(
        "alice",
        {
            "type": "dialogue",
            "originalText": "Hi",
            "description": "Hi",
            "actorId": "charlie",
            "targetIds": ["alice"],
        },
        timestamp="2026-07-06T12:05:00.000Z",
        conversation_id="c1",
        entry_id="m-hi",
    )
    run_cycle()
    editor = django_user_model.objects.create_user("eddie")
    services.set_alias("bob", "charlie", "the barkeep", user=editor, source="test")
    return cast


def labels(matrix: dict) -> dict[str, dict[str, tuple]]:
    """The knowledge matrix as viewer -> target -> (label, state)."""
    return {
        v: {t: (cell.label, cell.state) for t, cell in row.items()} for v, row in matrix.items()
    }


def grow(world_id: str, viewer_id: str, n: int = 12) -> None:
    """n more entities, each with attributes (one private) and an alias map naming the viewer,
    n more memories for the viewer across n conversations, folded, and n alias edits."""
    for i in range(n):
        obj = WorldObject.objects.create(
            id=f"extra-{i:02}",
            type=ObjectType.ENTITY,
            world_id=world_id,
            location_id="tavern-main",
            aliases_json=json.dumps([[viewer_id, f"stranger {i}"]]),
            is_agent=1,
        )
        Attribute.objects.create(
            object_id=obj.id, name="name", value=f"Extra {i}", visibility="PUBLIC"
        )
        Attribute.objects.create(
            object_id=obj.id, name="secret", value=f"s{i}", visibility="PRIVATE"
        )
        remember(
            viewer_id,
            _action(f"juggled {i} balls", obj.id),
            timestamp=f"2026-07-06T13:{i:02}:00.000Z",
            conversation_id=f"crowd-{i}",
        )
        services.set_alias(viewer_id, obj.id, f"juggler {i}", source="test")
    run_cycle()


# --- viewers, worlds, the knowledge matrix ---------------------------------------------------


def test_list_viewers_and_viewer_ids_answer_in_one_query(story, django_assert_max_num_queries):
    with django_assert_max_num_queries(QUERIES["list_viewers"]):
        assert [v.id for v in viewers.list_viewers()] == ["alice", "bob", "charlie"]
    with django_assert_max_num_queries(QUERIES["list_viewers"]):
        # a search matches attribute values too: bob's private true name
        assert [v.id for v in viewers.list_viewers(q="gareth")] == ["bob"]
    with django_assert_max_num_queries(QUERIES["viewer_ids"]):
        assert viewers.viewer_ids("tavern") == ["alice", "bob", "charlie"]
    assert viewers.viewer_ids("nowhere") == []
    with django_assert_max_num_queries(QUERIES["list_worlds"]):
        assert [w.id for w in viewers.list_worlds()] == ["tavern"]


def test_knowledge_matrix_is_every_label_of_every_viewer(story, django_assert_max_num_queries):
    with django_assert_max_num_queries(QUERIES["knowledge_matrix"]):
        entities, cells = matrix_reads.knowledge_matrix("tavern")
    matrix = labels(cells)
    assert [e.id for e in entities] == ["alice", "bob", "charlie"]
    assert matrix == {
        "alice": {
            "bob": ("the hooded figure", "descriptor"),
            "charlie": ("the bartender", "descriptor"),
        },
        "bob": {
            "alice": ("the traveller", "descriptor"),
            "charlie": ("the barkeep", "descriptor"),
        },
        "charlie": {
            "alice": (None, "unknown"),
            "bob": ("Gareth", "known"),
        },
    }


def test_knowledge_matrix_on_the_demo_world(demo, django_assert_max_num_queries):
    with django_assert_max_num_queries(DEMO_QUERIES["knowledge_matrix"]):
        entities, cells = matrix_reads.knowledge_matrix("harbor-town")
    matrix = labels(cells)
    assert [e.id for e in entities] == [
        "5b0e6c1a-3f2d-4e8b-9a71-c4d2e8f90a13",
        "npc-maren",
        "npc-oswin",
        "npc-pip",
        "npc-sable",
        "npc-tobiah",
    ]
    assert matrix["npc-pip"] == {
        "5b0e6c1a-3f2d-4e8b-9a71-c4d2e8f90a13": ("the lady with brass buttons", "descriptor"),
        "npc-maren": ("Maren Holloway", "known"),
        "npc-oswin": (None, "unknown"),
        "npc-sable": ("the tall one in grey", "descriptor"),
        "npc-tobiah": ("the sailor with the eye patch", "descriptor"),
    }
    assert matrix["npc-tobiah"]["npc-sable"] == ("Sable Quint", "known")
    assert sum(len(row) for row in matrix.values()) == 6 * 5


# --- the aliases panel ---------------------------------------------------------------------------


def test_alias_rows_and_targets(story, django_assert_max_num_queries):
    alice = get_viewer("alice")
    knowledge = world_knowledge("tavern")
    with django_assert_max_num_queries(0):
        assert alias_reads.alias_targets(alice, knowledge) == ["bob", "charlie"]
        handed = alias_reads.alias_rows(alice, knowledge)
    with django_assert_max_num_queries(QUERIES["alias_rows"]):
        rows = alias_reads.alias_rows(alice)
    assert handed == rows
    assert [
        (r.target_id, r.label, r.state, r.true_name, r.shown_as, r.suggestion, r.in_world)
        for r in rows
    ] == [
        (
            "bob",
            "the hooded figure",
            "descriptor",
            "Gareth",
            "the hooded figure",
            "the tall hooded man",
            True,
        ),
        (
            "charlie",
            "the bartender",
            "descriptor",
            "Charlie",
            "the bartender",
            "the bartender",
            True,
        ),
    ]


def test_alias_history_is_newest_first_with_who(story, django_assert_max_num_queries):
    services.set_alias("bob", "charlie", "Charlie", source="test")
    with django_assert_max_num_queries(QUERIES["alias_history"]):
        history = alias_reads.alias_history("bob")
        # the editor is fetched with the change, not one query per row
        changes = [
            (c.target_id, c.before, c.after, c.changed_by and c.changed_by.username)
            for c in history
        ]
    assert changes == [
        ("charlie", "the barkeep", "Charlie", None),
        ("charlie", None, "the barkeep", "eddie"),
    ]
    assert alias_reads.alias_history("bob", target_id="alice") == []
    assert alias_reads.alias_history("alice") == []


# --- the buffer panel and the entry page -------------------------------------------------------


def test_buffer_page_renders_what_alice_reads(story, django_assert_max_num_queries):
    alice = get_viewer("alice")
    with django_assert_max_num_queries(QUERIES["buffer_page"]):
        page = buffer.buffer_page(alice)
    assert [(e.id, e.line) for e in page.entries] == [("m-chest", CHEST), ("m-hi", HI)]
    assert (page.older, page.newer, page.rows_visited, page.filters) == (None, None, 2, {})
    with django_assert_max_num_queries(QUERIES["buffer_page"]):
        first = buffer.buffer_page(alice, limit=1)
    assert [e.id for e in first.entries] == ["m-hi"]
    assert first.newer is None and first.older is not None
    with django_assert_max_num_queries(QUERIES["buffer_page"]):
        older = buffer.buffer_page(alice, before=first.older, limit=1)
    assert [e.id for e in older.entries] == ["m-chest"]
    assert older.older is None and older.newer is not None
    dialogue = buffer.buffer_page(alice, types=frozenset({"dialogue"}))
    assert [e.id for e in dialogue.entries] == ["m-hi"]
    assert dialogue.filters == {"type": "dialogue"}
    assert [e.id for e in buffer.buffer_page(alice, q="CHEST").entries] == ["m-chest"]


def test_get_entry_renders_one_memory_or_raises_not_found(story, django_assert_max_num_queries):
    alice = get_viewer("alice")
    with django_assert_max_num_queries(QUERIES["get_entry"]):
        entry = entries.get_entry(alice, "m-chest")
    assert (entry.id, entry.line, entry.type, entry.actor_id, entry.outcome_json) == (
        "m-chest",
        CHEST,
        "action",
        "bob",
        '{"isValid":true,"reason":"r"}',
    )
    with pytest.raises(NotFound):
        entries.get_entry(get_viewer("bob"), "m-chest")  # alice's memory, not bob's


# --- the sessions panel ----------------------------------------------------------------------


def test_sessions_panel_on_the_cast(story, django_assert_max_num_queries):
    with django_assert_max_num_queries(QUERIES["sessions_panel"]):
        panel = projections.sessions_panel("alice")
    assert [
        (s.session_key, s.kind, s.first_at, s.memory_count, s.dialogue_count, s.last_member_id)
        for s in panel.sessions.items
    ] == [
        ("c1", "conversation", "2026-07-06T12:05:00.000Z", 1, 1, "m-hi"),
        ("scene:tavern-main", "scene", "2026-07-06T12:03:00.000Z", 1, 0, "m-chest"),
    ]
    assert panel.sessions.next_cursor is None
    assert panel.digest.lines == [
        "A scene at an unfamiliar place at 12:03 PM: 1 memory, 0 spoken",
        "A conversation at an unfamiliar place at 12:05 PM: 1 memory, 1 spoken",
    ]
    assert [
        (e.ordinal, e.first_member_id, e.last_member_id, e.member_count, e.is_open)
        for e in panel.episodes.items
    ] == [(1, "m-chest", "m-hi", 2, True)]
    assert panel.summaries == {"c1": (None, False), "scene:tavern-main": (None, False)}
    assert panel.places == {"c1": "an unfamiliar place", "scene:tavern-main": "an unfamiliar place"}


def test_sessions_panel_on_the_demo_world(demo, django_assert_max_num_queries):
    with django_assert_max_num_queries(DEMO_QUERIES["sessions_panel"]):
        panel = projections.sessions_panel("npc-tobiah")
    assert [(s.session_key, s.memory_count, s.dialogue_count) for s in panel.sessions.items] == [
        ("scene:loc-quay", 9, 3),
        ("conv-standoff", 5, 3),
        ("conv-breakfast", 8, 7),
        ("scene:loc-drowned-lantern", 1, 0),
    ]
    assert [(e.ordinal, e.member_count, e.is_open) for e in panel.episodes.items] == [
        (3, 8, True),
        (2, 9, False),
        (1, 6, False),
    ]
    assert len(panel.digest.lines) == 4
    assert set(panel.summaries) == {s.session_key for s in panel.sessions.items}
    # By where they happened, as Tobiah calls each place (its description), never loc-….
    tavern = "a low-beamed tavern with fishing nets hung from the rafters"
    quay = "a fish-scented stone quay where the night boats tie up"
    assert panel.places == {
        "scene:loc-quay": quay,
        "conv-standoff": quay,
        "conv-breakfast": tavern,
        "scene:loc-drowned-lantern": tavern,
    }


# --- long-term faces and entries --------------------------------------------------------------


def test_faces_of_a_viewer_without_long_term_memory(story, django_assert_max_num_queries):
    with django_assert_max_num_queries(QUERIES["faces_view"]):
        view = faces.faces_view("alice")
    assert (view.rows, view.answer.items, view.include_shadowed) == ([], [], False)
    with django_assert_max_num_queries(QUERIES["face_maps"]):
        assert faces.face_maps("alice") == ({}, {}, {})


def test_faces_view_on_the_demo_world(demo, django_assert_max_num_queries):
    with django_assert_max_num_queries(DEMO_QUERIES["faces_view"]):
        view = faces.faces_view("npc-tobiah")
    assert [(r.item.id, r.state, [a.item.id for a in r.absorbed]) for r in view.rows] == [
        ("abs-tobiah-signal-nights", "default", []),
        ("ltm-tobiah-03", "default", []),
        ("lore-brandy", "default", []),
        ("lore-lighthouse", "default", []),
        ("lore-signal", "default", []),
    ]
    assert view.answer.withheld == ["ltm-tobiah-02"]
    with django_assert_max_num_queries(DEMO_QUERIES["faces_view"]):
        shown = faces.faces_view("npc-tobiah", include_shadowed=True)
    # shadowed entries sit under the entry that shadows them, superseded ones under the rollup
    assert [
        (
            r.item.id,
            r.state,
            [a.item.id for a in r.absorbed],
            [(x.item.id, x.shadowed_by) for x in r.shadowed],
        )
        for r in shown.rows
    ] == [
        ("abs-tobiah-signal-nights", "default", ["ltm-tobiah-01"], []),
        ("ltm-tobiah-03", "default", [], [("lore-gullwing", "ltm-tobiah-03")]),
        ("lore-brandy", "default", [], []),
        ("lore-lighthouse", "default", [], []),
        ("lore-signal", "default", [], []),
    ]
    assert (shown.on_top, shown.shadowed_count, shown.superseded_count) == (5, 1, 1)
    assert [(w.id, w.title) for w in shown.withheld] == [("ltm-tobiah-02", "Brandy Route")]
    with django_assert_max_num_queries(DEMO_QUERIES["face_maps"]):
        assert faces.face_maps("npc-tobiah") == (
            {"lore-gullwing": "ltm-tobiah-03"},
            {"ltm-tobiah-01": "abs-tobiah-signal-nights"},
            {},
        )


def test_long_term_entry_names_its_rollup_and_members(demo, django_assert_max_num_queries):
    with django_assert_max_num_queries(DEMO_QUERIES["long_term_entry"]):
        member = faces.long_term_entry("npc-tobiah", "ltm-tobiah-01")
    assert (member.item.id, member.item.title, member.rollup, member.members) == (
        "ltm-tobiah-01",
        "The Signal",
        {"id": "abs-tobiah-signal-nights", "title": "Signal Nights"},
        [],
    )
    assert member.abstracted_into == "abs-tobiah-signal-nights"  # the row's own mark
    assert member.notes == [
        "[superseded] consolidated into abs-tobiah-signal-nights; delivered by id as evidence"
    ]
    with django_assert_max_num_queries(DEMO_QUERIES["long_term_entry"]):
        rollup = faces.long_term_entry("npc-tobiah", "abs-tobiah-signal-nights")
    assert (rollup.item.title, rollup.rollup) == ("Signal Nights", None)
    mark = {"abstracted_into": "abs-tobiah-signal-nights"}
    assert rollup.members == [
        {"id": "ltm-tobiah-01", "title": "The Signal", "kind": "ledger", **mark},
        {
            "id": "m-b11-tobiah",
            "title": "Sable Quint says 'Watch the lamp tonight. If the old man signals, we land "
            "the rest.' to me",
            "kind": "buffer",
            **mark,
        },
        {
            "id": "m-d01-tobiah",
            "title": "I hope the brass-buttoned woman doesn't look under the tarp",
            "kind": "buffer",
            **mark,
        },
    ]
    with pytest.raises(NotFound):
        faces.long_term_entry("npc-pip", "ltm-tobiah-01")  # tobiah's, not pip's


# --- the prompt page and the leak report ---------------------------------------------------------


def test_prompt_view_on_the_cast_has_no_findings(story, django_assert_max_num_queries):
    alice = get_viewer("alice")
    with django_assert_max_num_queries(QUERIES["prompt_view"]):
        view = prompt_view.prompt_view(alice)
    assert [s.name for s in view.sections] == [
        "Current moment",
        "The world as you perceive it",
        "Long-term memory",
        "Recent memories",
        "Sessions",
    ]
    assert view.sections[3].text == f"{CHEST}\n{HI}"
    assert view.text.startswith("## Current moment\nIt is 12:30 PM on Monday, July 6, 2026.\n")
    assert view.findings == []
    assert [astuple(s) for s in view.segments] == [(view.text, None, None, None)]


def test_prompt_view_marks_the_planted_leak(demo, django_assert_max_num_queries):
    pip = get_viewer("npc-pip")
    with django_assert_max_num_queries(DEMO_QUERIES["prompt_view"]):
        view = prompt_view.prompt_view(pip)
    # the prompt's findings carry their state, not the report's names
    prompt_leak = {
        k: v
        for k, v in PIP_REPORTED.items()
        if k not in ("viewer_name", "entity_name", "can_alias")
    }
    # and the first moment it is in the prompt, from the line it is read from (issue 27)
    prompt_leak["first_at"] = "2026-07-06T08:24:00.000Z"
    prompt_leak["first_line"] = (
        "The sailor with the eye patch whispers 'Run and tell Sable Quint the boat is in. "
        "Quick now.' to me"
    )
    assert view.findings == [prompt_leak]
    marked = [astuple(s) for s in view.segments if s.finding is not None]
    assert marked == [("Sable Quint", prompt_leak, 1, 1967)]
    assert "".join(s.text for s in view.segments) == view.text
    assert view.text[PIP_LEAK["start"] : PIP_LEAK["end"]] == "Sable Quint"


def test_leak_findings_and_counts_on_the_demo_world(demo, django_assert_max_num_queries):
    with django_assert_max_num_queries(DEMO_LEAK_QUERIES):
        findings = leaks.leak_findings()
    assert [(f["viewer_id"], f["kind"], f["text"], f["entity_id"]) for f in findings] == [
        (ISOLDE, "system_id", "npc-sable", "npc-sable"),
        (
            ISOLDE,
            "private_attribute",
            "two short flashes and one long means the quay is clear",
            "npc-oswin",
        ),
        ("npc-oswin", "system_id", "npc-sable", "npc-sable"),
        ("npc-pip", "unknown_name", "Sable Quint", "npc-sable"),
    ]
    assert leaks.leak_findings(viewer_id="npc-pip") == [PIP_REPORTED]
    assert leaks.leak_findings(kind="unknown_name") == [PIP_REPORTED]
    with django_assert_max_num_queries(DEMO_LEAK_QUERIES):
        counts = leaks.leak_counts()
    zero = {
        "private_attribute": 0,
        "system_id": 0,
        "unknown_name": 0,
        "raw_tag": 0,
        "unresolved_tag": 0,
    }
    assert counts == {
        ISOLDE: {**zero, "private_attribute": 1, "system_id": 1},
        "npc-maren": zero,
        "npc-oswin": {**zero, "system_id": 1},
        "npc-pip": {**zero, "unknown_name": 1},
        "npc-sable": zero,
        "npc-tobiah": zero,
    }


def test_projection_status_after_a_cycle(story, django_assert_max_num_queries):
    with django_assert_max_num_queries(QUERIES["projection_status"]):
        status = projections.projection_status()
    assert (status["lag_rows"], status["shard_count"]) == (0, shard_count())
    assert [s["shard"] for s in status["shards"]] == list(range(shard_count()))
    assert [s["rows_behind"] for s in status["shards"]] == [0] * shard_count()
    assert sum(s["last_cycle_rows"] for s in status["shards"]) == 2
    remember("alice", _action("left", "alice"), timestamp="2026-07-06T12:09:00.000Z")
    with django_assert_max_num_queries(QUERIES["projection_status"]):
        assert projections.projection_status()["lag_rows"] == 1


# --- the bounds do not grow with the world ----------------------------------------------------


def test_panel_reads_take_the_same_queries_in_a_bigger_world(story, django_assert_max_num_queries):
    grow("tavern", "alice")
    alice = get_viewer("alice")
    reads = {
        "list_viewers": lambda: viewers.list_viewers(),
        "viewer_ids": lambda: viewers.viewer_ids("tavern"),
        "list_worlds": viewers.list_worlds,
        "knowledge_matrix": lambda: matrix_reads.knowledge_matrix("tavern"),
        "alias_rows": lambda: alias_reads.alias_rows(alice),
        "buffer_page": lambda: buffer.buffer_page(alice),
        "get_entry": lambda: entries.get_entry(alice, "m-chest"),
        "alias_history": lambda: alias_reads.alias_history("alice"),
        "sessions_panel": lambda: projections.sessions_panel("alice"),
        "faces_view": lambda: faces.faces_view("alice"),
        "face_maps": lambda: faces.face_maps("alice"),
        "prompt_view": lambda: prompt_view.prompt_view(alice),
        "projection_status": projections.projection_status,
    }
    answers = {}
    for name, read in reads.items():
        with django_assert_max_num_queries(QUERIES[name]):
            answers[name] = read()
    # the reads saw the bigger world, not an empty one
    assert len(answers["viewer_ids"]) == 15
    assert len(answers["knowledge_matrix"][1]["alice"]) == 14
    assert len(answers["alias_rows"]) == 14
    assert len(answers["buffer_page"].entries) == 14
    assert len(answers["alias_history"]) == 12
    assert len(answers["sessions_panel"].sessions.items) == 14


def test_leak_scan_costs_a_fixed_number_of_queries_per_viewer(story, django_assert_max_num_queries):
    """Twelve more viewers cost six queries each (their prompt's long-term, buffer and
    sessions reads); alice's twelve more memories, sessions and aliases cost none."""
    with django_assert_max_num_queries(CAST_LEAK_QUERIES):
        assert leaks.leak_findings() == []
    grow("tavern", "alice")
    with django_assert_max_num_queries(CAST_LEAK_QUERIES + 12 * LEAK_QUERIES_PER_NEW_VIEWER):
        assert leaks.leak_findings() == []
    with django_assert_max_num_queries(CAST_LEAK_QUERIES + 12 * LEAK_QUERIES_PER_NEW_VIEWER + 2):
        counts = leaks.leak_counts()
    assert len(counts) == 15
    assert set(map(sum, map(dict.values, counts.values()))) == {0}
