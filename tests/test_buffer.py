"""Subjective buffer rendering (seed 000 §2-§3) against what upstream omnia itself rendered."""

from __future__ import annotations

import json
import re
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memory.engine.aliases import parse_aliases_json
from memory.engine.buffer import (
    Undeliverable,
    render_stored_entry,
    serialize_subjective_buffer_entry,
)
from memory.engine.buffer.jsdate import js_time_string
from memory.engine.buffer.v2 import entity_tag_ids, hydrate
from memory.engine.knowledge import Viewer

# The same on every backend: CI runs it on SQLite only (see the markers in pyproject.toml).
pytestmark = pytest.mark.pure

FIXTURES = Path(__file__).parent / "fixtures" / "omnia"

ALICE = Viewer.of(id="alice", aliases={"bob": "the hooded figure", "charlie": "the bartender"})
BOB = Viewer.of(id="bob", aliases={"alice": "the traveller"})
CHARLIE = Viewer.of(id="charlie", aliases={"bob": "Gareth"})


@dataclass(frozen=True)
class Entry:
    timestamp: str
    intent: dict[str, Any]
    outcome: dict[str, Any] | None = None


def _action(description: str, actor: str, targets: list[str] | None = None) -> dict[str, Any]:
    return {
        "type": "action",
        "originalText": description,
        "description": description,
        "actorId": actor,
        "targetIds": targets or [],
    }


def _dialogue(description: str, actor: str, targets: list[str]) -> dict[str, Any]:
    return {**_action(description, actor, targets), "type": "dialogue"}


def _world(
    era: str,
) -> tuple[dict[str, Viewer], dict[str, tuple[str, str, str | None]], list[str]]:
    with sqlite3.connect(FIXTURES / f"omnia-{era}-tavern.sqlite") as db:
        # Location ids ("cellar") are ordinary words of the raw text, so only entity and world
        # ids count as ids a line must never show.
        objects = db.execute(
            "SELECT id, type, aliases_json FROM objects WHERE type != 'location'"
        ).fetchall()
        rows = db.execute(
            "SELECT id, timestamp, intent_json, outcome_json FROM buffer_entries"
        ).fetchall()
    viewers = {
        id_: Viewer.of(id_, parse_aliases_json(raw))
        for id_, kind, raw in objects
        if kind == "entity"
    }
    return viewers, {r[0]: r[1:] for r in rows}, [o[0] for o in objects]


def _expected(era: str) -> list[dict[str, str]]:
    path = FIXTURES / f"omnia-{era}-tavern.expected.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


# --- v1: the seed's serializer, byte for byte ---------------------------------------------


def test_render_stored_entry_reproduces_every_v1_line_of_upstream() -> None:
    viewers, rows, _ = _world("74ffb45")
    expected = _expected("74ffb45")
    got = [
        {**row, "line": render_stored_entry(*rows[row["entry_id"]], viewers[row["viewer"]])}
        for row in expected
    ]
    assert got == expected
    assert len(expected) == 36


def test_serialize_subjective_buffer_entry_matches_seed_examples() -> None:
    chest = Entry(
        "2026-07-06T12:03:00.000Z",
        _action("opened the wooden chest", "bob"),
        {"isValid": True, "reason": "r"},
    )
    window = Entry("2026-07-06T12:10:00.000Z", _action("open the window", "alice"))
    door = Entry("2026-07-06T12:15:00.000Z", _action("knock on the door", "captain-voss"))
    assert serialize_subjective_buffer_entry(chest, ALICE) == (
        "[12:03:00 PM] the hooded figure opened the wooden chest (Outcome: Succeeded)"
    )
    assert serialize_subjective_buffer_entry(window, ALICE) == "[12:10:00 PM] you open the window"
    assert (
        serialize_subjective_buffer_entry(door, ALICE)
        == "[12:15:00 PM] an unfamiliar figure knock on the door"
    )


# Every right-hand side below was printed by Node 20's
# `new Date(s).toLocaleTimeString("en-US", {hour12: true, timeZone: "UTC"})`.
JS_CLOCK = {
    "2026-07-06T12:03:00.000Z": "12:03:00 PM",
    "2026-07-06T00:00:13.500Z": "12:00:13 AM",
    "2026-07-06T07:05:09.999Z": "7:05:09 AM",
    "2026-02-30T23:59:59.999Z": "11:59:59 PM",
    "2026-02-31T10:00:00Z": "10:00:00 AM",
    "2026-04-31T10:00:00Z": "10:00:00 AM",
    "2026-13-01T10:00:00Z": "Invalid Date",
    "2026-00-10T10:00:00Z": "Invalid Date",
    "2026-07-00T10:00:00Z": "Invalid Date",
    "2026-07-32T10:00:00Z": "Invalid Date",
    "2026-07-06T24:00:00Z": "12:00:00 AM",
    "2026-07-06T24:00:00.000Z": "12:00:00 AM",
    "2026-07-06T24:00": "12:00:00 AM",
    "2026-07-06T24:00:01Z": "Invalid Date",
    "2026-07-06T25:00:00Z": "Invalid Date",
    "2026-07-06T12:60:00Z": "Invalid Date",
    "2026-07-06": "12:00:00 AM",
    "2026-07": "12:00:00 AM",
    "2026": "12:00:00 AM",
    "2026-07Z": "12:00:00 AM",
    "2026-07T12:00Z": "12:00:00 PM",
    "2026T10:00Z": "10:00:00 AM",
    "2026-07-06T12:03": "12:03:00 PM",
    "2026-07-06T12:03Z": "12:03:00 PM",
    "2026-07-06t12:03:00Z": "12:03:00 PM",
    "2026-07-06T12:03:00z": "12:03:00 PM",
    "2026-07-06 12:03:00Z": "12:03:00 PM",
    "2026-07-06T12:03:00.123456789Z": "12:03:00 PM",
    "2026-07-06T12:03:00+02:00": "10:03:00 AM",
    "2026-07-06T12:03:00+0200": "10:03:00 AM",
    "2026-07-06T12:03:00-05:30": "5:33:00 PM",
    "2026-07-06T12:03:00.000+23:59": "12:04:00 PM",
    "2026-07-06T12:03:00.000+24:00": "Invalid Date",
    "2026-07-06T12:03:00.000+12:60": "Invalid Date",
    "+002026-07-06T12:03:00.000Z": "12:03:00 PM",
    "-000001-07-06T12:03:00Z": "12:03:00 PM",
    "-000000-07-06T12:03:00Z": "Invalid Date",
    "+275760-09-13T00:00:00.000Z": "12:00:00 AM",
    "+275760-09-13T00:00:00.001Z": "Invalid Date",
    "-271821-04-20T00:00:00Z": "12:00:00 AM",
    "-271821-04-19T23:59:59Z": "Invalid Date",
}


@pytest.mark.parametrize(("timestamp", "shown"), JS_CLOCK.items())
def test_js_time_string_matches_node(timestamp: str, shown: str) -> None:
    assert js_time_string(timestamp) == shown


@pytest.mark.parametrize(
    "timestamp",
    [
        "garbage",
        "",
        " 2026-07-06T12:03:00.000Z",
        "2026-07-06T12:03:00.Z",
        "2026-7-6T12:03:00Z",
        "20260706T120300Z",
    ],
)
def test_js_time_string_refuses_what_is_not_iso(timestamp: str) -> None:
    with pytest.raises(Undeliverable) as exc:
        js_time_string(timestamp)
    assert exc.value.reason == f"timestamp {timestamp!r} is not an ISO 8601 date"


def test_serialize_subjective_buffer_entry_keeps_upstream_quirks() -> None:
    def line(entry: Entry, viewer: Viewer = ALICE) -> str:
        return serialize_subjective_buffer_entry(entry, viewer)

    midnight = Entry("2026-07-06T00:00:00.000Z", _action("sleeps", "bob"))
    noon_seconds = Entry("2026-07-06T12:00:59.999Z", _action("wakes", "bob"))
    failed_empty = Entry(
        "2026-07-06T09:05:00.000Z", _action("jumps", "bob"), {"isValid": False, "reason": ""}
    )
    dialogue_outcome = Entry(
        "2026-07-06T13:00:00.000Z",
        _dialogue("hi", "bob", ["alice"]),
        {"isValid": False, "reason": "x"},
    )
    assert line(midnight) == "[12:00:00 AM] the hooded figure sleeps"
    assert line(noon_seconds) == "[12:00:59 PM] the hooded figure wakes"
    assert line(failed_empty) == "[9:05:00 AM] the hooded figure jumps (Outcome: Failed - )"
    assert line(dialogue_outcome) == '[1:00:00 PM] the hooded figure spoke to you: "hi"'

    blank = Viewer.of(id="alice", aliases={"alice": "the traveller", "bob": ""})
    assert (
        line(Entry("2026-07-06T12:00:00.000Z", _action("waves", "bob")), blank)
        == "[12:00:00 PM]  waves"
    )
    assert (
        line(Entry("2026-07-06T12:00:00.000Z", _action("waves", "alice")), blank)
        == "[12:00:00 PM] you waves"
    )
    # `[""].join(", ") || "someone"`: a lone blank alias reads as nobody in particular.
    assert line(Entry("2026-07-06T12:00:00.000Z", _dialogue("hi", "alice", ["bob"])), blank) == (
        '[12:00:00 PM] you spoke to someone: "hi"'
    )
    assert line(
        Entry("2026-07-06T12:00:00.000Z", _dialogue("hi", "alice", ["bob", "bob"])), blank
    ) == ('[12:00:00 PM] you spoke to , : "hi"')


def test_serialize_subjective_buffer_entry_passes_hostile_text_raw() -> None:
    text = 'says "<script>alert(1)</script>"\n\tand cafe\u0301 — «ok» 🍺 & &amp;'
    entry = Entry("2026-07-06T12:00:00.000Z", _dialogue(text, "bob", []))
    assert serialize_subjective_buffer_entry(entry, ALICE) == (
        f'[12:00:00 PM] the hooded figure spoke to someone: "{text}"'
    )
    action = Entry(
        "2026-07-06T12:00:00.000Z", _action(text, "bob"), {"isValid": False, "reason": "<b>no</b>"}
    )
    assert serialize_subjective_buffer_entry(action, ALICE) == (
        f"[12:00:00 PM] the hooded figure {text} (Outcome: Failed - <b>no</b>)"
    )


# --- v2: hydrate ---------------------------------------------------------------------------

# Where our line differs from what upstream rendered, and why ours is the right one.
V2_DIFFERENCES = {
    "598951e9-ec2d-4131-999d-100c2c9a6f20": "object of 'to A and B': 'me', not 'I'",
    "03126717-bf3e-4ad6-89e6-c622a762ae1d": "nested tag leaked 'entity@<alias>[..]'",
    "8e84527f-f634-4659-a96d-aa0e804b0b12": "nested tag leaked 'entity@I[..]'",
    "9b2d293b-5414-4fbb-bfe7-01bbc45eb51a": "nested tag leaked 'entity@Gareth[..]'",
    "57b216a7-2e3d-4ba6-b5c0-3ea76297ab81": "guard has no alias for bob: not 'him'",
    "ff66f58f-2532-4088-803a-a57bd1c94434": "barrel has no alias for bob: not 'him'",
}
OUR_LINES = {
    "598951e9-ec2d-4131-999d-100c2c9a6f20": (
        "An unfamiliar figure says 'Has anyone seen a boy with red hair?' to Gareth and me"
    ),
    "03126717-bf3e-4ad6-89e6-c622a762ae1d": "I wave at the hooded figure (Outcome: Succeeded)",
    "8e84527f-f634-4659-a96d-aa0e804b0b12": "The traveller waves at me (Outcome: Succeeded)",
    "9b2d293b-5414-4fbb-bfe7-01bbc45eb51a": (
        "An unfamiliar figure waves at Gareth (Outcome: Succeeded)"
    ),
    "57b216a7-2e3d-4ba6-b5c0-3ea76297ab81": "I say 'Halt! Who goes there?' to an unfamiliar figure",
    "ff66f58f-2532-4088-803a-a57bd1c94434": (
        "An unfamiliar figure says 'Halt! Who goes there?' to an unfamiliar figure"
    ),
}


def test_render_stored_entry_matches_upstream_v2_except_its_bugs() -> None:
    viewers, rows, _ = _world("head")
    expected = _expected("head")
    ours = {
        row["entry_id"]: render_stored_entry(*rows[row["entry_id"]], viewers[row["viewer"]])
        for row in expected
    }
    differing = {row["entry_id"] for row in expected if ours[row["entry_id"]] != row["line"]}
    matched = len(expected) - len(differing)
    rate = matched / len(expected)
    print(f"v2 exact-match rate against upstream: {matched}/{len(expected)} = {rate:.0%}")
    assert (matched, len(expected)) == (24, 30)
    assert differing == set(V2_DIFFERENCES)
    assert {k: ours[k] for k in differing} == OUR_LINES


def test_render_stored_entry_never_shows_an_id_or_tag_to_any_viewer() -> None:
    viewers, rows, object_ids = _world("head")
    id_pattern = re.compile("|".join(rf"(?<![\w-]){re.escape(i)}(?![\w-])" for i in object_ids))
    leaks = []
    for viewer in viewers.values():
        for entry_id, row in rows.items():
            line = render_stored_entry(*row, viewer)
            if id_pattern.search(line) or "entity@" in line or "[" in line:
                leaks.append((viewer.id, entry_id, line))
    assert leaks == []
    assert (len(viewers), len(rows), len(object_ids)) == (5, 30, 6)


@pytest.mark.parametrize(
    ("content", "viewer", "line"),
    [
        (
            "entity@bob[I] attempt to pick the lock",
            ALICE,
            "The hooded figure attempts to pick the lock",
        ),
        ("entity@bob[I] must reach the cellar", ALICE, "The hooded figure must reach the cellar"),
        ("entity@bob[I] will wait", CHARLIE, "Gareth will wait"),
        ("entity@bob[I] try to hide", CHARLIE, "Gareth tries to hide"),
        (
            "entity@bob[I] quietly watch entity@alice[her]",
            CHARLIE,
            "Gareth quietly watches an unfamiliar figure",
        ),
        (
            "entity@bob[I] pass the salt and entity@bob[I] push",
            ALICE,
            "The hooded figure passes the salt and the hooded figure pushes",
        ),
        ("entity@bob[I] do not care", ALICE, "The hooded figure does not care"),
        ("entity@bob[I]'m tired", ALICE, "The hooded figure is tired"),
        ("entity@bob[Bob] hides the coins", BOB, "I hide the coins"),
        (
            "entity@bob[Bob] is here. entity@bob[He] pushes the door",
            BOB,
            "I am here. I push the door",
        ),
        (
            "entity@bob[Bob] is here. entity@bob[He] pushes the door",
            ALICE,
            "The hooded figure is here. The hooded figure pushes the door",
        ),
        (
            "entity@bob[he] gives entity@alice[her] the key",
            ALICE,
            "The hooded figure gives me the key",
        ),
        ("entity@bob[he] takes entity@alice[her] sword", ALICE, "The hooded figure takes my sword"),
        ("entity@bob[he] takes entity@alice[her] sword", BOB, "I take the traveller's sword"),
        ("entity@alice[I] steal entity@bob[Bob]'s purse", BOB, "The traveller steals my purse"),
        ("entity@alice[I] steal entity@bob[his] purse", ALICE, "I steal the hooded figure's purse"),
        ("the purse is entity@bob[his]", BOB, "The purse is mine"),
        (
            "entity@alice[I] tell entity@bob[him] about entity@alice[myself]",
            BOB,
            "The traveller tells me about themselves",
        ),
        (
            "entity@alice[I] tell entity@bob[him] about entity@alice[myself]",
            ALICE,
            "I tell the hooded figure about myself",
        ),
        ("entity@bob[Bob] and entity@charlie[I] leave", CHARLIE, "Gareth and I leave"),
        ("entity@alice[They] are tired", ALICE, "I am tired"),
        ("entity@alice[They] are tired", BOB, "The traveller is tired"),
        ("I wonder why entity@bob[Gareth] came back", BOB, "I wonder why I came back"),
        ("'Hi,' entity@bob[Bob] says", BOB, "'Hi,' I say"),
        (
            'entity@bob[I] say "hello" to entity@charlie[Charlie]',
            CHARLIE,
            "Gareth says 'hello' to me",
        ),
        ("entity@entity@bob[bob][the hooded figure] waves", BOB, "I wave"),
        ("entity@bob waves", ALICE, "The hooded figure waves"),
        ("look at entity@bob.", CHARLIE, "Look at Gareth."),
        ("entity@[x] sits", ALICE, "An unfamiliar figure sits"),
        ("entity@ sits", ALICE, "An unfamiliar figure sits"),
        ("no tags at all", ALICE, "No tags at all"),
        ("", ALICE, ""),
    ],
)
def test_hydrate_resolves_tags_for_the_viewer(content: str, viewer: Viewer, line: str) -> None:
    assert hydrate(content, viewer) == line


def test_render_stored_entry_adds_outcomes_except_to_dialogue() -> None:
    def v2(kind: str) -> str:
        return json.dumps(
            {"type": kind, "content": "entity@bob[I] grin", "actorId": "bob", "targetIds": []}
        )

    failed = '{"isValid":false,"reason":""}'
    assert (
        render_stored_entry("x", v2("thought"), failed, ALICE)
        == "The hooded figure grins (Outcome: Failed - )"
    )
    assert render_stored_entry("x", v2("monologue"), None, ALICE) == "The hooded figure grins"
    assert render_stored_entry("x", v2("dialogue"), failed, ALICE) == "The hooded figure grins"


def test_entity_tag_ids_lists_referenced_ids_once() -> None:
    content = (
        "entity@entity@bob[bob][x] greets entity@alice[Alice], entity@bob[him] and entity@ nobody"
    )
    assert entity_tag_ids(content) == ["bob", "alice"]
    assert entity_tag_ids("plain text") == []


# --- rows that cannot be rendered -------------------------------------------------------------

TS = "2026-07-06T12:00:00.000Z"
V1 = '{"type":"action","originalText":"o","description":"d","actorId":"bob","targetIds":[]}'


@pytest.mark.parametrize(
    ("timestamp", "intent_json", "outcome_json", "reason"),
    [
        (TS, "{oops", None, "intent_json is not JSON"),
        (TS, "[" * 100_000, None, "intent_json is not JSON"),
        (TS, "[]", None, "intent is not a JSON object"),
        (TS, V1, "{oops", "outcome_json is not JSON"),
        (TS, V1, "[1]", "outcome is not an object"),
        (TS, V1, '{"isValid":false}', "outcome needs a boolean isValid and a string reason"),
        (
            TS,
            '{"type":"shout","description":"d","actorId":"b","targetIds":[]}',
            None,
            "unknown v1 intent type 'shout'",
        ),
        (
            TS,
            '{"type":"action","description":"d","targetIds":[]}',
            None,
            "intent has no string actorId",
        ),
        (
            TS,
            '{"type":"action","actorId":"b","targetIds":[]}',
            None,
            "v1 intent has no string description",
        ),
        (
            TS,
            '{"type":"action","description":"d","actorId":"b","targetIds":[1]}',
            None,
            "intent field 'targetIds' must be a list of strings",
        ),
        ("yesterday", V1, None, "timestamp 'yesterday' is not an ISO 8601 date"),
        (
            TS,
            '{"type":"shout","content":"c","actorId":"b"}',
            None,
            "unknown v2 intent type 'shout'",
        ),
        (TS, '{"type":"thought","content":"c"}', None, "intent has no string actorId"),
        (
            TS,
            '{"type":"thought","content":null,"actorId":"b"}',
            None,
            "v2 intent content is not a string",
        ),
    ],
)
def test_render_stored_entry_marks_broken_rows_undeliverable(
    timestamp: str, intent_json: str, outcome_json: str | None, reason: str
) -> None:
    with pytest.raises(Undeliverable) as exc:
        render_stored_entry(timestamp, intent_json, outcome_json, ALICE)
    assert exc.value.reason == reason


def test_render_stored_entry_treats_empty_or_null_outcome_as_none() -> None:
    assert render_stored_entry(TS, V1, "", ALICE) == "[12:00:00 PM] the hooded figure d"
    assert render_stored_entry(TS, V1, "null", ALICE) == "[12:00:00 PM] the hooded figure d"


_json_leaf = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False),
    st.text(max_size=20),
    st.sampled_from(
        ["dialogue", "action", "thought", "monologue", "bob", "alice", "entity@bob[I]"]
    ),
)
_json_value = st.recursive(
    _json_leaf,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
_intent_like = st.fixed_dictionaries(
    {},
    optional={
        "type": st.sampled_from(["dialogue", "action", "thought", "monologue", "x"]) | _json_value,
        "content": st.text(
            alphabet=st.sampled_from(list("entity@bob[]alice I'shes \".,")), max_size=60
        )
        | _json_value,
        "description": st.text(max_size=20) | _json_value,
        "actorId": st.sampled_from(["alice", "bob", ""]) | _json_value,
        "targetIds": st.lists(st.sampled_from(["alice", "bob", "zed"]), max_size=3) | _json_value,
    },
)


@settings(max_examples=400, deadline=None)
@given(
    timestamp=st.sampled_from([TS, "2026-13-01T00:00:00Z", "", "x"]) | st.text(max_size=30),
    intent=_intent_like | _json_value,
    outcome=st.none()
    | _json_value
    | st.fixed_dictionaries({"isValid": _json_value, "reason": _json_value}),
    raw_suffix=st.sampled_from(["", "}", "\x00", " "]),
)
def test_render_stored_entry_raises_only_undeliverable(
    timestamp: str, intent: object, outcome: object, raw_suffix: str
) -> None:
    intent_json = json.dumps(intent) + raw_suffix
    outcome_json = None if outcome is None else json.dumps(outcome)
    for viewer in (ALICE, BOB):
        try:
            line = render_stored_entry(timestamp, intent_json, outcome_json, viewer)
        except Undeliverable as exc:
            assert exc.reason
        else:
            assert isinstance(line, str)
            if isinstance(intent, dict) and "content" in intent:
                # v1 descriptions are raw by design; hydrated v2 content never keeps a tag.
                assert "entity@" not in line
