"""Shards and generations: the bookkeeping every write takes part in (seed 003, rule 5).

Owners are spread over OMNIA_PROJECTION_SHARDS shards by a stable hash. A write holds its
shard's row lock while it takes a `created_at`, so (created_at, id) is commit order within a
shard and a fold reading forward from a watermark never skips a row that committed late. An
owner's generation counts its writes; abstract() pins it.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable

from django.conf import settings
from django.db import connection
from django.db.models import F

from memory.active_save import scoped_cursor
from memory.engine.clock import now_us
from memory.models import BufferEntry, LeakScan, OwnerState, ProjectionShard, WorldObject

# The PostgreSQL channel a writer NOTIFYs and projection workers LISTEN on.
CHANNEL = "omnia_memory"


def shard_count() -> int:
    return max(1, int(settings.OMNIA_PROJECTION_SHARDS))


def shard_of(owner_id: str, shards: int | None = None) -> int:
    # crc32 is stable across processes (unlike hash()), so every worker agrees.
    return zlib.crc32(owner_id.encode("utf-8")) % (shards or shard_count())


def _layout(stored: dict[int, int]) -> int:
    """The shard count the stored rows were partitioned under (a store from before the layout
    was kept: its number of shard rows, which is what every write then agreed on)."""
    marks = {layout for layout in stored.values() if layout}
    return max(marks) if marks else len(stored)


def stored_layout() -> int:
    return _layout(dict(ProjectionShard.objects.values_list("shard", "layout")))


def ensure_shards() -> None:
    """Make the configured shard rows that are missing. They carry the STORED layout, never
    the configured one: a changed OMNIA_PROJECTION_SHARDS stays visible until the cycle (or a
    rebuild) re-partitions."""
    stored = dict(ProjectionShard.objects.values_list("shard", "layout"))
    layout = _layout(stored) if stored else shard_count()
    if stored and 0 in stored.values():
        ProjectionShard.objects.filter(layout=0).update(layout=layout)
    missing = [
        ProjectionShard(shard=s, layout=layout) for s in range(shard_count()) if s not in stored
    ]
    if missing:
        ProjectionShard.objects.bulk_create(missing, ignore_conflicts=True)


def needs_repartition() -> bool:
    """True when the rows are partitioned for another shard count than the configured one
    (or shard rows exist outside it): some rows would sit where no cycle looks."""
    stored = dict(ProjectionShard.objects.values_list("shard", "layout"))
    if not stored:
        return False
    return _layout(stored) != shard_count() or any(s >= shard_count() or s < 0 for s in stored)


def repartition(owner_ids: Iterable[str]) -> int:
    """Move every buffer row of these owners to its owner's shard under the configured count.
    Returns how many rows moved. Run it under every shard's lock, inside the transaction that
    re-derives the projections and resets the watermarks (rebuild)."""
    n = shard_count()
    by_shard: dict[int, list[str]] = {}
    for owner_id in owner_ids:
        if owner_id.__class__ is str:
            by_shard.setdefault(shard_of(owner_id, n), []).append(owner_id)
    moved = 0
    for shard, ids in by_shard.items():
        for start in range(0, len(ids), 500):
            moved += (
                BufferEntry.objects.filter(owner_id__in=ids[start : start + 500])
                .exclude(shard=shard)
                .update(shard=shard)
            )
    return moved


def relayout() -> None:
    """The shard rows of the configured count, stamped with it; rows outside it dropped (their
    buffer rows were just re-partitioned). Every shard's created_at counter starts past every
    row it may now hold."""
    n = shard_count()
    top = max(ProjectionShard.objects.values_list("last_assigned_at", flat=True), default=0)
    ProjectionShard.objects.exclude(shard__in=range(n)).delete()
    ProjectionShard.objects.bulk_create(
        [ProjectionShard(shard=s, layout=n) for s in range(n)], ignore_conflicts=True
    )
    ProjectionShard.objects.update(layout=n, last_assigned_at=top)


def claim_created_at(shard: int, count: int = 1) -> int:
    """Lock the shard and hand out `count` strictly increasing write times; returns the first.

    Must run inside the writer's transaction: the lock is held until it commits. One
    UPDATE … RETURNING both takes the row lock and advances the counter (PostgreSQL re-reads
    the row a concurrent writer just committed before applying it), so a write pays one round
    trip for its place in the commit order, not a SELECT FOR UPDATE and an UPDATE.
    """
    greatest = "GREATEST" if connection.vendor == "postgresql" else "MAX"
    sql = (
        f"UPDATE {ProjectionShard._meta.db_table} "
        f"SET last_assigned_at = {greatest}(%s, last_assigned_at + 1) + %s "
        "WHERE game_save_id = %(save)s AND shard = %s RETURNING last_assigned_at"
    )
    for _attempt in (1, 2):
        with scoped_cursor() as cursor:
            cursor.execute(sql, [now_us(), count - 1, shard])
            row = cursor.fetchone()
        if row is not None:
            return row[0] - (count - 1)
        ensure_shards()  # a store migrated before its shard rows were made: make them once
    raise RuntimeError(f"projection shard {shard} could not be created")


def bump_generation(owner_id: str) -> int:
    """A write for this owner: its generation moves, and so does its prompt (the stored leak
    findings that read it are behind until rescanned)."""
    LeakScan.objects.mark_stale([owner_id])
    with scoped_cursor() as cursor:
        cursor.execute(
            f"UPDATE {OwnerState._meta.db_table} SET generation = generation + 1 "
            "WHERE game_save_id = %(save)s AND owner_id = %s RETURNING generation",
            [owner_id],
        )
        row = cursor.fetchone()
    if row is not None:
        return row[0]
    OwnerState.objects.create(owner_id=owner_id, generation=1)
    return 1


def generation_of(owner_id: str) -> int:
    state = OwnerState.objects.filter(owner_id=owner_id).first()
    return state.generation if state else 0


def world_clock_for(owner: WorldObject) -> str | None:
    if owner.world_id is None:
        return None
    return WorldObject.objects.filter(id=owner.world_id).values_list("clock_iso", flat=True).first()


def notify_written() -> None:
    """Tell listening workers that rows were written. Call inside the writer's transaction.

    PostgreSQL delivers a NOTIFY only when its transaction commits (a rolled-back write wakes
    nobody) and folds duplicates within one transaction, so calling it per row is cheap.
    Elsewhere it does nothing: SQLite workers poll.
    """
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(f"NOTIFY {CHANNEL}")


def bump_generations(owner_ids: Iterable[str]) -> None:
    """Bump the generation of every owner a loader wrote memories for (seed 003: every write
    for an owner bumps it, so an abstract() pinned before a reload is refused)."""
    ids = sorted(set(owner_ids))
    for start in range(0, len(ids), 500):
        chunk = ids[start : start + 500]
        OwnerState.objects.filter(owner_id__in=chunk).update(generation=F("generation") + 1)
        have = set(OwnerState.objects.filter(owner_id__in=chunk).values_list("owner_id", flat=True))
        OwnerState.objects.bulk_create(
            [OwnerState(owner_id=o, generation=1) for o in chunk if o not in have],
            ignore_conflicts=True,
        )
