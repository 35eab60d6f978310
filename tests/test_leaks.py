"""The epistemic leak scanner: the upstream leaks caught with exact spans, the viewer rules, and
the automaton agreeing with one regex per pattern on random worlds."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memory.engine.leaks.naive import build_naive_index, scan_text_naive
from memory.engine.leaks.scanner import (
    Finding,
    LeakWorld,
    PrivateValue,
    build_leak_index,
    fold,
    scan_text,
)

# The same on every backend: CI runs it on SQLite only (see the markers in pyproject.toml).
pytestmark = pytest.mark.pure

FIXTURES = Path(__file__).parent / "fixtures" / "omnia"
GUARD = "68edd7b6-360d-46f8-a332-36a0baf598d3"
UPSTREAM_LINE = '[12:00:00 PM] the hooded figure spoke to the bartender: "Bob greets Charlie"'


def tavern(bob_name: str = "Gareth", **alice_aliases: str) -> LeakWorld:
    return LeakWorld(
        object_ids=frozenset({"tavern-world", "alice", "bob", "charlie", GUARD}),
        true_names={"alice": "Alice", "bob": bob_name, "charlie": "Charlie"},
        aliases={
            "alice": alice_aliases or {"bob": "the hooded figure", "charlie": "the bartender"},
            "bob": {"alice": "the traveller"},
            "charlie": {"bob": "Gareth"},
        },
        private_values=(
            PrivateValue("bob", "true_name", "Gareth", frozenset({"charlie"})),
            PrivateValue("bob", "weapon", "a dagger strapped to his ankle", frozenset({"charlie"})),
            PrivateValue("bob", "health", "85"),
        ),
    )


def fixture_world() -> LeakWorld:
    """The snapshot as omnia 74ffb45 saved it, read straight from its SQLite file."""
    db = sqlite3.connect(FIXTURES / "omnia-74ffb45-tavern.sqlite")
    objects = db.execute("select id, aliases_json from objects").fetchall()
    attributes = db.execute("select object_id, name, value, visibility from attributes").fetchall()
    acl: dict[tuple[str, str], set[str]] = {}
    for object_id, name, entity_id in db.execute("select * from attribute_acl"):
        acl.setdefault((object_id, name), set()).add(entity_id)
    db.close()
    true_names = {}
    for object_id, name, value, _ in attributes:
        if name == "true_name" or (name == "name" and object_id not in true_names):
            true_names[object_id] = value
    true_names.pop("tavern-world")
    return LeakWorld(
        object_ids=frozenset(object_id for object_id, _ in objects),
        true_names=true_names,
        aliases={oid: dict(json.loads(raw)) for oid, raw in objects if raw},
        private_values=tuple(
            PrivateValue(oid, name, value, frozenset(acl.get((oid, name), ())))
            for oid, name, value, visibility in attributes
            if visibility == "PRIVATE"
        ),
    )


def scan(world: LeakWorld, viewer: str, text: str) -> list[Finding]:
    return scan_text(build_leak_index(world), viewer, text)


def test_leaks_upstream_true_name_is_an_unknown_name_for_alice() -> None:
    assert scan(tavern(bob_name="Bob"), "alice", UPSTREAM_LINE) == [
        Finding(
            "unknown_name", 57, 60, "Bob", "bob", "alice knows bob only as 'the hooded figure'"
        ),
        Finding(
            "unknown_name",
            68,
            75,
            "Charlie",
            "charlie",
            "alice knows charlie only as 'the bartender'",
        ),
    ]


def test_leaks_known_name_is_no_finding() -> None:
    world = tavern(bob_name="Bob", bob="Bob", charlie="the bartender")
    assert scan(world, "alice", UPSTREAM_LINE) == [
        Finding(
            "unknown_name",
            68,
            75,
            "Charlie",
            "charlie",
            "alice knows charlie only as 'the bartender'",
        )
    ]


def test_leaks_known_name_ignores_case() -> None:
    world = tavern(bob_name="Bob", bob="bob", charlie="CHARLIE")
    assert scan(world, "alice", UPSTREAM_LINE) == []


def test_leaks_fixture_line_catches_the_id_written_as_a_name() -> None:
    # In the saved world bob's true name is Gareth: "Bob" is his id, capitalised by upstream.
    line = json.loads(
        (FIXTURES / "omnia-74ffb45-tavern.expected.jsonl").read_text().splitlines()[0]
    )
    assert line["line"] == UPSTREAM_LINE
    assert scan(fixture_world(), line["viewer"], line["line"]) == [
        Finding("system_id", 57, 60, "Bob", "bob", "system id of object 'bob'"),
        Finding(
            "unknown_name",
            68,
            75,
            "Charlie",
            "charlie",
            "alice knows charlie only as 'the bartender'",
        ),
    ]


def test_leaks_fixture_every_line_for_its_viewer() -> None:
    index = build_leak_index(fixture_world())
    report = []
    for raw in (FIXTURES / "omnia-74ffb45-tavern.expected.jsonl").read_text().splitlines():
        row = json.loads(raw)
        for f in scan_text(index, row["viewer"], row["line"]):
            report.append((row["entry_id"], f.kind, f.text, f.entity_id))
    assert report == [
        ("entry-1", "system_id", "Bob", "bob"),
        ("entry-1", "unknown_name", "Charlie", "charlie"),
        ("entry-2", "system_id", "Bob", "bob"),
        ("entry-2", "unknown_name", "Charlie", "charlie"),
        ("entry-3", "system_id", "Bob", "bob"),
        ("entry-4", "system_id", "Bob", "bob"),
        ("entry-5", "system_id", "Bob", "bob"),
        ("entry-6", "system_id", "Bob", "bob"),
        ("entry-22", "system_id", "Bob", "bob"),
        ("entry-22", "system_id", GUARD, GUARD),
        ("entry-23", "system_id", "Bob", "bob"),
        ("entry-23", "system_id", GUARD, GUARD),
    ]


def test_leaks_uuid_is_a_system_id_with_exact_span() -> None:
    text = f"Bob tries to slip past {GUARD} toward"
    assert scan(tavern(bob_name="Bob", bob="Bob"), "alice", text) == [
        Finding("system_id", 23, 59, GUARD, GUARD, f"system id of object '{GUARD}'")
    ]


def test_leaks_an_id_its_true_name_explains_is_that_name_leaking() -> None:
    # Issue 13 item 10: "bob" is bob's id and his true name "Bob"; alice does not know the
    # name, so the word is the name leaking (written as stored or not), not a system id.
    assert scan(tavern(bob_name="Bob"), "alice", "bob waits") == [
        Finding("unknown_name", 0, 3, "bob", "bob", "alice knows bob only as 'the hooded figure'")
    ]


def readable() -> LeakWorld:
    return LeakWorld(
        object_ids=frozenset({"w", "hale", "the-tannery", "ned", "ida", "pip", GUARD}),
        true_names={"hale": "Hale Morrow", "ned": "Ned", "ida": "Ida", "pip": "Pip"},
        aliases={
            "ned": {"hale": "Hale Morrow"},
            "ida": {"hale": "the tanner's widow"},
            "pip": {"hale": "Old Hale"},
            "hale": {},
        },
    )


def test_leaks_a_readable_id_inside_a_known_name_is_no_finding() -> None:
    text = "Hale nods. hale waits. Hale Morrow smiles."
    assert scan(readable(), "hale", text) == []  # her own name
    assert scan(readable(), "ned", text) == []  # he knows her as "Hale Morrow"
    assert scan(readable(), "pip", "Hale nods.") == []  # a label he uses holds the word


def test_leaks_a_readable_id_inside_an_unknown_true_name_is_an_unknown_name() -> None:
    reason = (
        "ida knows hale only as 'the tanner's widow'; 'Hale' is part of its true name 'Hale Morrow'"
    )
    assert scan(readable(), "ida", "Hale nods.") == [
        Finding("unknown_name", 0, 4, "Hale", "hale", reason)
    ]


def test_leaks_an_id_no_name_explains_is_still_a_system_id() -> None:
    text = f"Hale walks to the-tannery past {GUARD}."
    assert [(f.kind, f.text) for f in scan(readable(), "ned", text)] == [
        ("system_id", "the-tannery"),
        ("system_id", GUARD),
    ]
    assert scan(readable(), "ned", "the tannery") == []


def test_leaks_private_value_without_access() -> None:
    text = "He keeps a dagger strapped to his ankle."
    expected_reason = "private attribute 'weapon' of bob; alice has no access"
    assert scan(tavern(), "alice", text) == [
        Finding("private_attribute", 9, 39, text[9:39], "bob", expected_reason, "weapon")
    ]
    assert scan(tavern(), "charlie", text) == []
    assert scan(tavern(), "bob", text) == []


def test_leaks_short_numeric_private_value_is_not_a_pattern() -> None:
    assert scan(tavern(), "alice", "[12:00:85 PM] health 85") == []


def test_leaks_own_true_name_and_access_granted_name_are_no_findings() -> None:
    assert scan(tavern(), "bob", "Gareth sighs") == []
    assert scan(tavern(), "charlie", "Gareth sighs") == []
    assert scan(tavern(), "alice", "Gareth sighs") == [
        Finding(
            "unknown_name", 0, 6, "Gareth", "bob", "alice knows bob only as 'the hooded figure'"
        )
    ]


def test_leaks_no_alias_reason() -> None:
    assert scan(tavern(), "bob", "Charlie") == [
        Finding(
            "unknown_name",
            0,
            7,
            "Charlie",
            "charlie",
            "bob has no alias for charlie; 'Charlie' is its true name",
        )
    ]


def test_leaks_whole_tokens_only() -> None:
    assert scan(tavern(), "alice", "Garethson, bobbing, charlie_2, alice's") == []


def test_leaks_own_alias_label_shields_a_name_inside_it() -> None:
    world = LeakWorld(
        object_ids=frozenset({"a", "voss"}),
        true_names={"voss": "Voss"},
        aliases={"a": {"voss": "Captain Voss"}, "b": {}},
    )
    assert scan(world, "a", "Captain Voss nods") == []
    assert scan(world, "b", "Captain Voss nods") == [
        Finding(
            "unknown_name",
            8,
            12,
            "Voss",
            "voss",
            "b has no alias for voss; 'Voss' is its true name",
        )
    ]


def test_leaks_longest_overlap_wins() -> None:
    world = LeakWorld(
        object_ids=frozenset({"x", "y"}),
        true_names={"x": "Ann", "y": "Ann Marie"},
        aliases={"v": {}},
    )
    assert [(f.start, f.end, f.entity_id) for f in scan(world, "v", "Ann Marie and Ann")] == [
        (0, 9, "y"),
        (14, 17, "x"),
    ]


def test_leaks_ordinary_words_are_silenced() -> None:
    world = LeakWorld(
        object_ids=frozenset({"cellar", "w1"}),
        true_names={"w1": "Will"},
        aliases={"v": {}},
        ordinary_words=frozenset({"cellar"}),
    )
    assert [(f.kind, f.text) for f in scan(world, "v", "I will go to the cellar")] == [
        ("unknown_name", "will")
    ]


def test_leaks_fold_keeps_offsets() -> None:
    text = "İstanbul ΟΔΟΣ Bob"
    assert len(fold(text)) == len(text)
    world = tavern(bob_name="Bob")
    assert [(f.start, f.end) for f in scan(world, "alice", text)] == [(14, 17)]


def test_leaks_empty_world_and_text() -> None:
    empty = LeakWorld(object_ids=frozenset(), true_names={}, aliases={})
    assert scan(empty, "v", "anything") == []
    assert scan(tavern(), "alice", "") == []


# --- the automaton and the baseline agree ---------------------------------------------------

_ALPHABET = "abAB _-'.é\x01"
_token = st.text(alphabet=_ALPHABET, min_size=1, max_size=6)


@st.composite
def worlds_and_texts(draw: st.DrawFn) -> tuple[LeakWorld, str, str]:
    ids = draw(st.lists(_token, min_size=1, max_size=6, unique=True))
    names = {i: draw(_token) for i in ids if draw(st.booleans())}
    viewers = draw(st.lists(st.sampled_from(ids), min_size=1, max_size=3, unique=True))
    aliases = {v: draw(st.dictionaries(st.sampled_from(ids), _token, max_size=3)) for v in viewers}
    privates = tuple(
        PrivateValue(
            draw(st.sampled_from(ids)),
            f"attr{n}",
            draw(_token),
            frozenset(draw(st.lists(st.sampled_from(ids), max_size=2))),
        )
        for n in range(draw(st.integers(0, 3)))
    )
    ordinary = frozenset(draw(st.lists(_token, max_size=2)))
    world = LeakWorld(frozenset(ids), names, aliases, privates, ordinary)
    pieces = [
        *ids,
        *names.values(),
        *(p.value for p in privates),
        *(label for m in aliases.values() for label in m.values()),
    ]
    words = draw(st.lists(st.one_of(st.sampled_from(pieces), _token), max_size=12))
    glue = draw(
        st.lists(
            st.sampled_from(["", " ", "  ", ".", "-", "x"]),
            min_size=len(words),
            max_size=len(words),
        )
    )
    cased = [w.upper() if draw(st.booleans()) else w for w in words]
    text = "".join(w + g for w, g in zip(cased, glue, strict=True))
    return world, draw(st.sampled_from(viewers)), text


@settings(max_examples=400, deadline=None)
@given(worlds_and_texts())
def test_leaks_automaton_equals_naive(case: tuple[LeakWorld, str, str]) -> None:
    world, viewer, text = case
    assert scan_text(build_leak_index(world), viewer, text) == scan_text_naive(
        build_naive_index(world), viewer, text
    )


@settings(max_examples=200, deadline=None)
@given(worlds_and_texts(), st.text(max_size=30))
def test_leaks_any_text_scans_like_naive(case: tuple[LeakWorld, str, str], noise: str) -> None:
    world, viewer, text = case
    text = noise + text + noise
    found = scan_text(build_leak_index(world), viewer, text)
    assert found == scan_text_naive(world, viewer, text)
    assert found == sorted(found, key=lambda f: f.start)
    assert all(text[f.start : f.end] == f.text for f in found)
