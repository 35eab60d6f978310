"""The one write door for canonical memory rows: remember, retract (seed 000 §4).

Every write for an owner happens under its shard's row lock (memory.engine.shards), which
makes (created_at, id) the commit order within a shard, and bumps the owner's generation,
which abstract() pins.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.utils import timezone
from ulid import ULID

from memory.active_save import scoped_cursor
from memory.engine.clock import iso_now, timestamp_problem
from memory.engine.errors import InvalidInput, NotFound
from memory.engine.intents import IntentV1, IntentV2, Outcome, parse_intent, parse_outcome
from memory.engine.shards import bump_generation, claim_created_at, notify_written, shard_of
from memory.engine.strict_json import text_problem
from memory.models import BufferEntry, ObjectType, ProjectionShard, WorldObject


class MemoryWriteError(InvalidInput):
    """A write refused for its input (a taken id…); nothing was written."""


class UnknownOwner(NotFound):
    """The owner is not an entity of any loaded world; nothing was written."""


class UnknownMemory(NotFound):
    """No memory row has that id."""


@dataclass(frozen=True)
class _Owner:
    location_id: str | None
    world_clock: str | None
    actor_known: bool  # the intent's actorId (as first read) is an object of the save


# The owner and its world's clock in one round trip, as fixed SQL: this runs on every write,
# and compiling the equivalent annotated ORM query cost more CPU than the query itself.
_OWNER_SQL = (
    f"SELECT o.location_id, w.clock_iso, EXISTS (SELECT 1 FROM {WorldObject._meta.db_table} a "
    "WHERE a.game_save_id = o.game_save_id AND a.id = %s) "
    f"FROM {WorldObject._meta.db_table} o "
    f"LEFT JOIN {WorldObject._meta.db_table} w "
    "ON w.game_save_id = o.game_save_id AND w.id = o.world_id "
    "WHERE o.game_save_id = %(save)s AND o.id = %s AND o.type = %s"
)


def _owner_with_clock(owner_id: str, actor_id: str | None) -> _Owner | None:
    with scoped_cursor() as cursor:
        cursor.execute(_OWNER_SQL, [actor_id or "", owner_id, ObjectType.ENTITY.value])
        row = cursor.fetchone()
    return _Owner(row[0], row[1], bool(row[2])) if row else None


def _actor_of(intent: object) -> str | None:
    """The actorId an intent names, before it is parsed (None when it cannot tell yet)."""
    found = intent.get("actorId") if isinstance(intent, dict) else getattr(intent, "actorId", None)
    return found if isinstance(found, str) and not text_problem(found) else None


@dataclass(frozen=True)
class Remembered:
    entry: BufferEntry
    generation: int


def remember(
    owner_id: str,
    intent: dict[str, Any] | str | IntentV1 | IntentV2,
    *,
    timestamp: str | None = None,
    location_id: str | None = None,
    outcome: dict[str, Any] | str | Outcome | None = None,
    conversation_id: str | None = None,
    entry_id: str | None = None,
    pinned: int = 0,
) -> Remembered:
    """Write one memory row for `owner_id`; validated here, at the door (seed 000 §4)."""
    if not isinstance(owner_id, str) or text_problem(owner_id):
        raise UnknownOwner(f"no entity with id {owner_id!r}", field="viewer_id")
    _check_fields(timestamp, location_id, conversation_id, entry_id, pinned)
    actor_id = _actor_of(intent)
    owner = _owner_with_clock(owner_id, actor_id)
    if owner is None:
        raise UnknownOwner(f"no entity with id {owner_id!r}", field="viewer_id")
    parsed = intent if isinstance(intent, IntentV1 | IntentV2) else parse_intent(intent)
    # The actor must be an object of the save (an actorId "nobody" was stored, 201). Asked
    # in the owner's query; again only when the text intent could not be read before it.
    if parsed.actorId == owner_id:
        known = True
    elif parsed.actorId == actor_id:
        known = owner.actor_known
    else:
        known = WorldObject.objects.filter(id=parsed.actorId).exists()
    if not known:
        raise MemoryWriteError(
            f"intent.actorId: no object with id {parsed.actorId[:200]!r} in this save",
            field="intent.actorId",
        )
    parsed_outcome = (
        outcome if isinstance(outcome, Outcome) or outcome is None else parse_outcome(outcome)
    )
    if entry_id is not None and BufferEntry.objects.filter(id=entry_id).exists():
        raise MemoryWriteError(f"a memory with id {entry_id!r} already exists", field="id")
    if timestamp is None:
        # The world clock, unless an imported clock names no instant: then wall time, so a
        # write through this door never lands a row the fold must leave out of time.
        clock = owner.world_clock
        timestamp = clock if clock and timestamp_problem(clock) is None else iso_now()
    shard = shard_of(owner_id)
    # No savepoint: inside a caller's transaction (the audited service) a failure here fails
    # the whole write anyway, and a savepoint is two more round trips per row.
    with transaction.atomic(savepoint=False):
        created_at = claim_created_at(shard)
        entry = BufferEntry.objects.create(
            id=entry_id or str(ULID()),
            owner_id=owner_id,
            timestamp=timestamp,
            location_id=location_id if location_id is not None else owner.location_id,
            intent_json=parsed.model_dump_json(exclude_none=True),
            outcome_json=parsed_outcome.model_dump_json() if parsed_outcome else None,
            pinned=pinned,
            created_at=created_at,
            shard=shard,
            conversation_id=conversation_id,
        )
        generation = bump_generation(owner_id)
        notify_written()  # wakes LISTENing workers on commit
    return Remembered(entry=entry, generation=generation)


INT32 = 2**31 - 1  # pinned is an INTEGER column: PostgreSQL's is 32 bits


def _check_fields(
    timestamp: object,
    location_id: object,
    conversation_id: object,
    entry_id: object,
    pinned: object,
) -> None:
    """Refuse, before anything is written, what omnia could not have written: a time that is
    not ISO-8601 with a zone, a non-text id, text no backend can store, a pinned flag that is
    not an integer."""
    if timestamp is not None and (problem := timestamp_problem(timestamp)):
        raise MemoryWriteError(f"timestamp: {problem}", field="timestamp")
    for field, value in (
        ("location_id", location_id),
        ("conversation_id", conversation_id),
        ("id", entry_id),
    ):
        if value is None:
            continue
        if not isinstance(value, str):
            raise MemoryWriteError(f"{field} must be a string", field=field)
        if problem := text_problem(value):
            raise MemoryWriteError(f"{field} {problem}", field=field)
    if entry_id == "":
        raise MemoryWriteError("id must not be empty", field="id")
    if type(pinned) is not int or not -INT32 - 1 <= pinned <= INT32:
        raise MemoryWriteError("pinned must be a 32-bit integer", field="pinned")


def retract(entry_id: str) -> BufferEntry:
    """Mark a memory retracted; the row stays (it still happened, and still counts)."""
    with transaction.atomic():
        entry = BufferEntry.objects.select_for_update().filter(id=entry_id).first()
        if entry is None:
            raise UnknownMemory(f"no memory with id {entry_id!r}", field="entry_id")
        if entry.retracted_at is None:
            ProjectionShard.objects.select_for_update().filter(shard=entry.shard).first()
            entry.retracted_at = timezone.now()
            entry.save(update_fields=["retracted_at"])
            bump_generation(entry.owner_id)
    return entry
