"""The serializer: one stored memory row as one viewer reads it (seed 000 §2-§3).

Two eras. v1 intents (`originalText`/`description`) render byte for byte like the seed's
`serializeSubjectiveBufferEntry`, quirks included (`v1`, with JavaScript's clock in `jsdate`).
v2 intents (`content` with `entity@<id>[words]` tags) render like later omnia's `hydrate`, minus
its bugs (`v2`, with the English agreement it needs in `grammar`). This module is the door:
it tells the eras apart.

This is the read path for up to a million rows per page of a benchmark, so no pydantic here:
`json.loads`, precompiled regexes and a cached clock format. Validation lives at the doors
(`memory.engine.intents`); a row the doors would have refused is `Undeliverable`, never a crash.
"""

from __future__ import annotations

import json
from typing import Literal

from memory.engine.aliases import AliasHolder
from memory.engine.buffer.as_omnia import render_v2_as_omnia
from memory.engine.buffer.entry import Entry, Undeliverable
from memory.engine.buffer.v1 import render_v1
from memory.engine.buffer.v2 import render_v2

# Two readings of a row (issue 30): "omnia", the line omnia itself put in the NPC's prompt
# (its v2 renderer's bugs included; v1 lines were always exact), and "corrected", the same
# event with omnia's v2 bugs put right. They differ only for v2 intents.
Reading = Literal["omnia", "corrected"]
READINGS: tuple[Reading, ...] = ("omnia", "corrected")


def render_parsed(
    timestamp: str,
    intent: object,
    outcome: object,
    viewer: AliasHolder,
    reading: Reading = "corrected",
) -> str:
    """A row's intent and outcome, already parsed (`parse_stored`), as the viewer reads it: a
    caller that wants both readings parses once."""
    if type(intent) is not dict:
        raise Undeliverable("intent is not a JSON object")
    if "content" in intent:
        if reading == "omnia":
            return render_v2_as_omnia(intent, outcome, viewer)
        return render_v2(intent, outcome, viewer)
    return render_v1(timestamp, intent, outcome, viewer)


def serialize_subjective_buffer_entry(
    entry: Entry, viewer: AliasHolder, reading: Reading = "corrected"
) -> str:
    """The seed's serializer over an already-parsed entry (`.timestamp`, `.intent`, `.outcome`)."""
    return render_parsed(entry.timestamp, entry.intent, entry.outcome, viewer, reading)


_loads = json.loads


def parse_stored(intent_json: str, outcome_json: str | None) -> tuple[object, object]:
    """A `buffer_entries` row's intent and outcome, parsed; Undeliverable if they are not JSON."""
    try:
        intent = _loads(intent_json)
    except (ValueError, TypeError, RecursionError):
        raise Undeliverable("intent_json is not JSON") from None
    outcome = None
    if outcome_json:
        try:
            outcome = _loads(outcome_json)
        except (ValueError, TypeError, RecursionError):
            raise Undeliverable("outcome_json is not JSON") from None
    return intent, outcome


def render_stored_entry(
    timestamp: str,
    intent_json: str,
    outcome_json: str | None,
    viewer: AliasHolder,
    reading: Reading = "corrected",
) -> str:
    """Render a `buffer_entries` row straight from its columns; Undeliverable if it cannot be."""
    intent, outcome = parse_stored(intent_json, outcome_json)
    return render_parsed(timestamp, intent, outcome, viewer, reading)
