"""Events: omnia writes one buffer row per witness of a moment, and the rows of one moment —
the same world (the owner's), the same timestamp, the same intent — are one event.

Derived, never stored: an event's id is its moment, `<timestamp>~<digest>`, the digest of the
world and the *parsed* intent (keys sorted, no whitespace), so key order or spacing in the
stored JSON never splits an event and the id stays while rows come and go. Its witnesses are
read through the (save, timestamp) index (migration 0021) and told apart here: a moment's
rows are a handful, and comparing parsed JSON is Python's job, not the database's. Rows the
buffer cannot show (a quarantined row's empty id) are no witness; a retracted row still is —
it happened, and its owner's buffer shows it.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache

from memory.active_save import among, scoped_rows
from memory.engine.errors import NotFound

SEPARATOR = "~"
DIGEST_CHARS = 16
_DIGEST = re.compile(f"[0-9a-f]{{{DIGEST_CHARS}}}")
# SQLite refuses statements with too many parameters; timestamps go in this many at a time.
TIMESTAMPS_PER_STATEMENT = 500

_ROWS_AT = (
    "SELECT b.id, b.owner_id, b.timestamp, b.intent_json, o.world_id, b.outcome_json, b.untimed "
    "FROM buffer_entries b LEFT JOIN objects o "
    "ON o.game_save_id = b.game_save_id AND o.id = b.owner_id "
    "WHERE b.game_save_id = %(save)s AND {stamps} AND b.id <> ''"
)


def canonical_intent(intent_json: str) -> str:
    """The intent as moments compare it: parsed and written again with its keys sorted and
    no whitespace; text that is not JSON stands for itself (marked apart, so it never equals
    the canonical form of a parsed one)."""
    try:
        parsed = json.loads(intent_json)
        return "j" + json.dumps(parsed, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    except (ValueError, TypeError, RecursionError):
        return "r" + intent_json


@lru_cache(maxsize=8192)
def _digest(world_id: str | None, intent_json: str) -> str:
    # Cached by the raw text: every witness of a moment usually stores the same bytes.
    key = json.dumps([world_id, canonical_intent(intent_json)], ensure_ascii=False)
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:DIGEST_CHARS]


def event_id(world_id: str | None, timestamp: str, intent_json: str) -> str:
    """The stable id of the moment a row belongs to."""
    return f"{timestamp}{SEPARATOR}{_digest(world_id, intent_json)}"


def split_event_id(event: str) -> tuple[str, str]:
    """(timestamp, digest) of an event id; NotFound for text no event id can be."""
    timestamp, sep, digest = event.rpartition(SEPARATOR)
    if not sep or not _DIGEST.fullmatch(digest):
        raise NotFound(f"{event!r} is not an event id", field="event")
    return timestamp, digest


@dataclass(frozen=True)
class WitnessRow:
    """One witness's row of a moment: which row, whose, in which world, and its event."""

    entry_id: str
    owner_id: str
    timestamp: str
    world_id: str | None
    event: str
    intent_json: str = ""
    outcome_json: str | None = None
    untimed: bool = False


def rows_at(timestamps: Iterable[str]) -> list[WitnessRow]:
    """Every row the buffers show at these timestamps (the active save's), with its event:
    one statement per TIMESTAMPS_PER_STATEMENT timestamps, each an index seek."""
    wanted = sorted(set(timestamps))
    found: list[WitnessRow] = []
    for start in range(0, len(wanted), TIMESTAMPS_PER_STATEMENT):
        chunk = wanted[start : start + TIMESTAMPS_PER_STATEMENT]
        stamps, params = among("b.timestamp", chunk)
        rows = scoped_rows(_ROWS_AT.format(stamps=stamps), params)
        found.extend(
            WitnessRow(
                entry_id,
                owner,
                timestamp,
                world,
                event_id(world, timestamp, intent),
                intent,
                outcome,
                bool(untimed),
            )
            for entry_id, owner, timestamp, intent, world, outcome, untimed in rows
        )
    return found


def witness_counts(world_id: str | None, moments: Sequence[tuple[str, str]]) -> dict[str, int]:
    """event id -> how many rows witness it, for the events of these (timestamp, intent_json)
    moments in this world: what one buffer page shows beside its lines, in one statement."""
    wanted = {event_id(world_id, timestamp, intent) for timestamp, intent in moments}
    counts = dict.fromkeys(wanted, 0)
    for row in rows_at(timestamp for timestamp, _intent in moments):
        if row.event in counts:
            counts[row.event] += 1
    return counts


def witnesses_of(event: str) -> list[WitnessRow]:
    """The rows of one event, in owner order; NotFound when none holds it."""
    timestamp, _digest_part = split_event_id(event)
    rows = sorted(
        (row for row in rows_at([timestamp]) if row.event == event),
        key=lambda row: (row.owner_id, row.entry_id),
    )
    if not rows:
        raise NotFound(f"no event with id {event!r}", field="event")
    return rows
