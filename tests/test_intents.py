"""The doors' intent and outcome schemas (seed 000 §2, §4)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from memory.engine.intents import (
    IntentError,
    IntentV1,
    IntentV2,
    Outcome,
    parse_intent,
    parse_outcome,
)

# The same on every backend: CI runs it on SQLite only (see the markers in pyproject.toml).
pytestmark = pytest.mark.pure

FIXTURES = Path(__file__).parent / "fixtures" / "omnia"


def test_parse_intent_reads_v1_json() -> None:
    intent = parse_intent(
        '{"type":"action","originalText":"Bob tried.","description":"tries","actorId":"bob",'
        '"targetIds":["alice"],"extra":1}'
    )
    assert intent == IntentV1(
        type="action",
        originalText="Bob tried.",
        description="tries",
        actorId="bob",
        targetIds=["alice"],
    )


def test_parse_intent_reads_v2_with_default_modifiers() -> None:
    intent = parse_intent(
        {"type": "thought", "content": "entity@bob[I] wonder", "actorId": "bob", "targetIds": []}
    )
    assert intent == IntentV2(
        type="thought", content="entity@bob[I] wonder", actorId="bob", targetIds=[], modifiers=[]
    )


def test_parse_intent_dumps_back_without_extras() -> None:
    intent = parse_intent(
        '{"type":"dialogue","content":"hi","actorId":"a","targetIds":["b"],"x":2}'
    )
    assert intent.model_dump_json() == (
        '{"type":"dialogue","content":"hi","actorId":"a","targetIds":["b"],"modifiers":[]}'
    )


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (
            "{not json",
            "intent is not JSON (Expecting property name enclosed in double quotes: "
            "line 1 column 2 (char 1))",
        ),
        ("[1, 2]", "intent must be a JSON object, not an array"),
        ('"text"', "intent must be a JSON object, not a string"),
        ({"actorId": "a"}, 'intent: missing field "type"'),
        (
            {"type": "x", "content": "c", "actorId": "a", "targetIds": []},
            'intent: unknown type "x" (a v2 intent is one of dialogue, action, monologue, thought)',
        ),
        (
            {
                "type": "thought",
                "originalText": "o",
                "description": "d",
                "actorId": "a",
                "targetIds": [],
            },
            'intent: unknown type "thought" (a v1 intent is one of dialogue, action)',
        ),
        ({"type": "action", "content": "c", "targetIds": []}, 'intent: missing field "actorId"'),
        (
            {"type": "action", "originalText": "o", "actorId": "a", "targetIds": []},
            'intent: missing field "description"',
        ),
        (
            {"type": "action", "content": "c", "actorId": "a", "targetIds": "bob"},
            'intent: field "targetIds" input should be a valid list',
        ),
        (
            {"type": "action", "content": "c", "actorId": 7, "targetIds": []},
            'intent: field "actorId" input should be a valid string',
        ),
        (
            {"type": "action", "content": "c", "actorId": "a", "targetIds": [1]},
            'intent: field "targetIds.0" input should be a valid string',
        ),
    ],
)
def test_parse_intent_names_the_problem(data: object, message: str) -> None:
    with pytest.raises(IntentError) as exc:
        parse_intent(data)  # type: ignore[arg-type]
    assert str(exc.value) == message


def test_parse_outcome_reads_valid_and_null() -> None:
    assert parse_outcome('{"isValid":false,"reason":""}') == Outcome(isValid=False, reason="")
    assert parse_outcome({"isValid": True, "reason": "ok"}) == Outcome(isValid=True, reason="ok")
    assert parse_outcome(None) is None
    assert parse_outcome("null") is None


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ("nope", "outcome is not JSON (Expecting value: line 1 column 1 (char 0))"),
        ("[]", "outcome must be a JSON object, not an array"),
        (
            {"isValid": "yes", "reason": ""},
            'outcome: field "isValid" input should be a valid boolean',
        ),
        ({"isValid": True}, 'outcome: missing field "reason"'),
    ],
)
def test_parse_outcome_names_the_problem(data: object, message: str) -> None:
    with pytest.raises(IntentError) as exc:
        parse_outcome(data)  # type: ignore[arg-type]
    assert str(exc.value) == message


def test_parse_intent_accepts_every_upstream_row() -> None:
    eras: dict[str, list[str]] = {}
    for name in ("omnia-74ffb45-tavern.sqlite", "omnia-head-tavern.sqlite"):
        with sqlite3.connect(FIXTURES / name) as db:
            rows = db.execute("SELECT intent_json, outcome_json FROM buffer_entries ORDER BY rowid")
            for intent_json, outcome_json in rows:
                intent = parse_intent(intent_json)
                parse_outcome(outcome_json)
                eras.setdefault(name, []).append(type(intent).__name__)
    assert {k: (len(v), sorted(set(v))) for k, v in eras.items()} == {
        "omnia-74ffb45-tavern.sqlite": (36, ["IntentV1"]),
        "omnia-head-tavern.sqlite": (30, ["IntentV2"]),
    }
