"""Subjective aliases (seed 000 §1, §3), checked against what upstream omnia really resolved."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from memory.engine.aliases import (
    UNFAMILIAR,
    AliasesJsonError,
    alias_state,
    dump_aliases_json,
    parse_aliases_json,
    resolve_alias,
    validate_alias_label,
)
from memory.engine.descriptors import derive_descriptor
from memory.engine.knowledge import Viewer

# The same on every backend: CI runs it on SQLite only (see the markers in pyproject.toml).
pytestmark = pytest.mark.pure

FIXTURES = Path(__file__).parent / "fixtures" / "omnia"
ERAS = ("omnia-74ffb45-tavern", "omnia-head-tavern")


def _viewers(era: str) -> dict[str, Viewer]:
    with sqlite3.connect(FIXTURES / f"{era}.sqlite") as db:
        rows = db.execute("SELECT id, aliases_json FROM objects WHERE type = 'entity'").fetchall()
    return {id_: Viewer.of(id=id_, aliases=parse_aliases_json(raw)) for id_, raw in rows}


@pytest.mark.parametrize("era", ERAS)
def test_resolve_alias_matches_every_upstream_pair(era: str) -> None:
    viewers = _viewers(era)
    expected = [
        json.loads(line) for line in (FIXTURES / f"{era}.aliases.jsonl").read_text().splitlines()
    ]
    got = [
        {**row, "alias": resolve_alias(viewers[row["viewer"]], row["target"])} for row in expected
    ]
    assert got == expected
    assert len(expected) == {"omnia-74ffb45-tavern": 20, "omnia-head-tavern": 30}[era]


def test_resolve_alias_ignores_self_alias_and_keeps_empty_alias() -> None:
    viewer = Viewer.of(id="alice", aliases={"alice": "the traveller", "bob": ""})
    assert resolve_alias(viewer, "alice") == "you"
    assert resolve_alias(viewer, "bob") == ""
    assert resolve_alias(viewer, "charlie") == UNFAMILIAR == "an unfamiliar figure"


def test_parse_aliases_json_reads_pair_array_in_order() -> None:
    raw = '[["charlie","the bartender"],["bob","the hooded figure"],["charlie","Charlie"]]'
    parsed = parse_aliases_json(raw)
    assert list(parsed.items()) == [("charlie", "Charlie"), ("bob", "the hooded figure")]


def test_parse_aliases_json_reads_scenario_object_like_javascript() -> None:
    parsed = parse_aliases_json('{"bob":"the hooded figure","7":"seven","1":"one","alice":"A"}')
    # A JavaScript object enumerates array-index keys first, ascending.
    assert list(parsed.items()) == [
        ("1", "one"),
        ("7", "seven"),
        ("bob", "the hooded figure"),
        ("alice", "A"),
    ]


@pytest.mark.parametrize("raw", [None, "", "null", "[]", "{}"])
def test_parse_aliases_json_reads_empty_forms(raw: str | None) -> None:
    assert parse_aliases_json(raw) == {}


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ('[["bob"', "aliases_json is not JSON: Expecting ',' delimiter: line 1 column 8 (char 7)"),
        (
            '"bob"',
            "aliases_json must be an array of [targetId, label] pairs or an object "
            "{targetId: label}, not str",
        ),
        (
            "42",
            "aliases_json must be an array of [targetId, label] pairs or an object "
            "{targetId: label}, not int",
        ),
        ('[["bob","x","y"]]', "aliases_json[0] must be a [targetId, label] pair"),
        ('[["bob",1]]', "aliases_json[0]: targetId and label must both be strings"),
        ('[{"bob":"x"}]', "aliases_json[0] must be a [targetId, label] pair"),
        ('{"bob":null}', 'aliases_json["bob"]: label must be a string'),
    ],
)
def test_parse_aliases_json_refuses_corrupt_input(raw: str, message: str) -> None:
    with pytest.raises(AliasesJsonError) as exc:
        parse_aliases_json(raw)
    assert str(exc.value) == message


def test_dump_aliases_json_writes_what_javascript_writes() -> None:
    assert dump_aliases_json({"bob": "the hooded figure"}) == '[["bob","the hooded figure"]]'
    assert dump_aliases_json({}) == "[]"
    assert (
        dump_aliases_json({"é": 'say "hi"\n\t\x01', "x": "\ud800"})
        == '[["é","say \\"hi\\"\\n\\t\\u0001"],["x","\\ud800"]]'
    )


@pytest.mark.parametrize("era", ERAS)
def test_dump_aliases_json_round_trips_every_upstream_row(era: str) -> None:
    with sqlite3.connect(FIXTURES / f"{era}.sqlite") as db:
        stored = [
            r[0]
            for r in db.execute("SELECT aliases_json FROM objects WHERE aliases_json IS NOT NULL")
        ]
    assert [dump_aliases_json(parse_aliases_json(raw)) for raw in stored] == stored


def test_alias_state_tells_known_descriptor_unknown() -> None:
    assert alias_state("Gareth", "Gareth") == "known"
    assert alias_state(" gareth", "Gareth") == "known"
    assert alias_state("the hooded figure", "Gareth") == "descriptor"
    assert alias_state("the bartender", None) == "descriptor"
    assert alias_state(None, "Gareth") == "unknown"


@pytest.mark.parametrize(
    ("attributes", "descriptor"),
    [
        ({"appearance": "a tall man hidden under a dark hooded cloak"}, "the tall hooded man"),
        (
            {"appearance": "a young woman in a dusty green travelling cloak"},
            "the young cloaked woman",
        ),
        ({"occupation": "bartender"}, "the bartender"),
        ({"appearance": "a bored town guard in dented chainmail"}, "the bored armoured guard"),
        (
            {
                "gender": "male",
                "appearance": "A tall human with short dark hair and alert eyes.",
                "clothing": "A clean, sterile grey jumpsuit with 'Alpha' embroidered on it.",
            },
            "the tall dark-haired man",
        ),
        (
            {
                "gender": "male",
                "appearance": "A medium-build human with long blonde hair tied back.",
            },
            "the blonde-haired man",
        ),
        ({"gender": "female"}, "the woman"),
        ({"contents": "half-full of dark ale"}, UNFAMILIAR),
        ({}, UNFAMILIAR),
    ],
)
def test_derive_descriptor_builds_short_labels(attributes: dict[str, str], descriptor: str) -> None:
    assert derive_descriptor(attributes) == descriptor


def test_derive_descriptor_never_uses_names_or_ids() -> None:
    attributes = {"name": "Gareth", "true_name": "Gareth", "appearance": "a tall bob man"}
    assert derive_descriptor(attributes, known_ids=["bob"]) == "the tall man"
    assert derive_descriptor({"occupation": "bob"}, known_ids=["bob"]) == UNFAMILIAR


def test_validate_alias_label_reports_errors_and_warnings() -> None:
    ids = {"alice", "bob", "charlie", "68edd7b6-360d-46f8-a332-36a0baf598d3"}

    def check(
        label: str, viewer: str = "alice", target: str = "bob"
    ) -> tuple[list[str], list[str]]:
        return validate_alias_label(label, viewer_id=viewer, target_id=target, all_ids=ids)

    assert check("the hooded figure") == ([], [])
    assert check("Bob") == ([], [])
    assert check("x", target="nobody") == (["target 'nobody' is not an object of this world"], [])
    assert check("x", target="alice") == (
        ['an entity\'s alias for itself is never used (self is always "you")'],
        [],
    )
    assert check("charlie") == (["label 'charlie' is a system id"], [])
    assert check("the man 68edd7b6-360d-46f8-a332-36a0baf598d3") == (
        [
            "label 'the man 68edd7b6-360d-46f8-a332-36a0baf598d3' contains a generated id "
            "(68edd7b6-360d-46f8-a332-36a0baf598d3)"
        ],
        [],
    )
    assert check("guard 01ARZ3NDEKTSV4RRFFQ69G5FAV") == (
        [
            "label 'guard 01ARZ3NDEKTSV4RRFFQ69G5FAV' contains a generated id "
            "(01ARZ3NDEKTSV4RRFFQ69G5FAV)"
        ],
        [],
    )
    assert check("charlie's friend") == (
        [],
        ["label \"charlie's friend\" contains the system id 'charlie'"],
    )
    assert check("  ") == ([], ["label is empty: lines will read with a blank where the name goes"])
