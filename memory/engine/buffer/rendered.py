"""A stored buffer row as one viewer reads it: the rendered line, or why it cannot be shown,
beside the facts the inspector filters on. Shared by the buffer panel, the prompt and the CLI.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from memory.engine.buffer.entry import Undeliverable
from memory.engine.buffer.flaws import Flaw, line_flaws
from memory.engine.buffer.serializer import (
    Reading,
    parse_stored,
    render_parsed,
    render_stored_entry,
)
from memory.engine.knowledge import Viewer
from memory.models import BufferEntry


@dataclass(frozen=True)
class RenderedEntry:
    """`line` is omnia's reading (what the NPC's prompt received), `line_corrected` the same
    event with omnia's v2 bugs put right; equal for every v1 row."""

    id: str
    timestamp: str
    created_at: int
    line: str | None
    undeliverable: str | None
    intent_json: str
    outcome_json: str | None
    type: str | None
    actor_id: str | None
    target_ids: tuple[str, ...]
    location_id: str | None
    conversation_id: str | None
    retracted: bool
    abstracted_into: str | None
    line_corrected: str | None = None

    @property
    def flaws(self) -> tuple[Flaw, ...]:
        return line_flaws(self.line, self.line_corrected)

    def reading(self, reading: Reading) -> str | None:
        return self.line if reading == "omnia" else self.line_corrected


def intent_facts(intent_json: str) -> tuple[str | None, str | None, tuple[str, ...]]:
    """(type, actor id, target ids) of a stored intent, each None or empty where the row does
    not say it as a string (a poison row is read as saying nothing)."""
    try:
        intent = json.loads(intent_json)
        targets = intent.get("targetIds") or []
        return (
            intent.get("type") if isinstance(intent.get("type"), str) else None,
            intent.get("actorId") if isinstance(intent.get("actorId"), str) else None,
            tuple(t for t in targets if isinstance(t, str)) if isinstance(targets, list) else (),
        )
    except (ValueError, AttributeError, TypeError, RecursionError):  # JSON nested too deep
        return None, None, ()


def _guarded(
    render: Callable[[], str], timestamp: str, untimed: object
) -> tuple[str | None, str | None]:
    try:
        line = render()
    except Undeliverable as exc:
        return None, str(exc)
    except Exception as exc:  # a poison row is shown as undeliverable, never a 500 (issue 14)
        return None, f"cannot be rendered: {exc.__class__.__name__}"
    if untimed:  # kept as omnia wrote it (a v2 line shows no time), never placed
        return None, f"timestamp {timestamp!r} names no instant"
    return line, None


def render_line(
    timestamp: str,
    intent_json: str,
    outcome_json: str | None,
    untimed: object,
    viewer: Viewer,
    reading: Reading = "omnia",
) -> tuple[str | None, str | None]:
    """(line, None) as the viewer reads the row, or (None, why it cannot be shown): the line
    alone, for a reader that needs no more of the row (the prompt's recent memories). The
    reading is omnia's unless asked: that is what the NPC's LLM call received."""
    return _guarded(
        lambda: render_stored_entry(timestamp, intent_json, outcome_json, viewer, reading),
        timestamp,
        untimed,
    )


def render_readings(
    timestamp: str, intent_json: str, outcome_json: str | None, untimed: object, viewer: Viewer
) -> tuple[str | None, str | None, str | None]:
    """(omnia's line, the corrected line, why omnia's cannot be shown) with one parse of the
    row: what render_line gives for each reading. Only a v2 row (one with a `content`) reads
    differently; a v1 row's corrected line is omnia's."""
    try:
        intent, outcome = parse_stored(intent_json, outcome_json)
    except Undeliverable as exc:
        return None, None, str(exc)
    line, reason = _guarded(
        lambda: render_parsed(timestamp, intent, outcome, viewer, "omnia"), timestamp, untimed
    )
    if type(intent) is not dict or "content" not in intent:
        return line, line, reason
    corrected, _ = _guarded(
        lambda: render_parsed(timestamp, intent, outcome, viewer, "corrected"), timestamp, untimed
    )
    return line, corrected, reason


def render_entry(entry: BufferEntry, viewer: Viewer) -> RenderedEntry:
    line, corrected, reason = render_readings(
        entry.timestamp, entry.intent_json, entry.outcome_json, entry.untimed, viewer
    )
    type_, actor, targets = intent_facts(entry.intent_json)
    return RenderedEntry(
        id=entry.id,
        timestamp=entry.timestamp,
        created_at=entry.created_at,
        line=line,
        undeliverable=reason,
        intent_json=entry.intent_json,
        outcome_json=entry.outcome_json,
        type=type_,
        actor_id=actor,
        target_ids=targets,
        location_id=entry.location_id,
        conversation_id=entry.conversation_id,
        retracted=entry.retracted_at is not None,
        abstracted_into=entry.abstracted_into,
        line_corrected=corrected,
    )


BUFFER_FIELDS = (
    "id",
    "timestamp",
    "created_at",
    "intent_json",
    "outcome_json",
    "location_id",
    "conversation_id",
    "retracted_at",
    "abstracted_into",
    "owner_id",
    "untimed",
)


def iter_buffer(owner_id: str, *, chunk: int = 2000) -> Iterator[BufferEntry]:
    """Every row of one owner in chronological order (ties: write order), streamed."""
    qs = BufferEntry.objects.filter(owner_id=owner_id).only(*BUFFER_FIELDS)
    yield from qs.order_by("timestamp", "created_at", "id").iterator(chunk_size=chunk)
