"""Rebuild and verify: the same fold over every canonical row (seed 003, rule 7).

`rebuild` re-derives every projection row in one transaction; `verify` folds afresh, writes
nothing and reports drift. Rebuild = incremental is structural: both use the cycle's fold.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from operator import attrgetter, itemgetter
from typing import NamedTuple, TypeVar

from django.db import connection, transaction
from django.db.models import F
from django.utils import timezone

from memory.engine import fanout
from memory.engine.clock import time_key
from memory.engine.projections import episodes, problems
from memory.engine.projections.rows import (
    REBUILD_BATCH,
    FoldRow,
    by_owner,
    fetch,
    iter_rows_owner_major,
    mark_id,
    middle_owner,
)
from memory.engine.projections.sessions import (
    SessionState,
    fold_owner,
    fold_session,
    insert_sessions,
)
from memory.engine.shards import (
    ensure_shards,
    needs_repartition,
    relayout,
    repartition,
    shard_count,
    shard_of,
)
from memory.models import (
    ClockMark,
    Episode,
    MemorySession,
    ProjectionShard,
    WorldObject,
)

_SHARD = itemgetter(7)  # FoldRow.shard


@dataclass
class RebuildResult:
    rows_folded: int
    sessions: int
    episodes: int
    problems: int = 0
    rows_moved: int = 0  # rows re-partitioned to the configured shard count


_RECENCY = attrgetter("last_key", "owner_id")
T = TypeVar("T")


def by_recency(states: Iterable[T]) -> list[T]:
    """Sessions or episodes in the order of their last moment, not owner by owner. Each
    owner's latest is the row the next cycle updates: written in this order, those rows share
    the table's last pages, where owner-major order gave each owner a page of its own (the
    cycle's commit wrote every one of them to the WAL)."""
    return sorted(states, key=_RECENCY)


def fold_checked(
    owner_rows: list[FoldRow], *, walk: bool = True
) -> tuple[dict[str, SessionState], list[episodes.EpisodeState], list[problems.Problem]]:
    """One owner's sessions and episodes from the rows the fold can take, and the problems.

    The same two questions the cycle asks (problems.defect_of, then: does folding it raise),
    so rebuild = incremental holds for the quarantine too. The batch folds run once; only an
    owner whose fold raised is walked row by row to find the culprit."""
    rows, bad = problems.sift(owner_rows)
    try:
        return fold_owner(rows), episodes.segment(rows) if walk else [], bad
    except Exception:
        kept: list[FoldRow] = []
        for row in rows:
            try:
                fold_session(None, row)
                episodes.step(None, row)
            except Exception as exc:
                bad.append(problems.Problem(row, problems.fold_failure(exc)))
            else:
                kept.append(row)
        return fold_owner(kept), episodes.segment(kept) if walk else [], bad


class OwnerFold(NamedTuple):
    """One owner's fold: what a rebuild writes of it, and what it reports."""

    owner_id: str
    rows: int
    sessions: list[SessionState]
    episodes: list[episodes.EpisodeState]
    bad: list[problems.Problem]
    misplaced: bool  # rows outside the owner's shard: moved after the fold


def fold_owners(
    shards: int, owners: tuple[str | None, str | None] = (None, None)
) -> Iterator[OwnerFold]:
    """Every owner's fold, owner by owner (of the owners in `owners`, as iter_rows_owner_major
    bounds them)."""
    for owner, owner_rows in by_owner(iter_rows_owner_major(owners=owners)):
        # Rows outside their owner's shard (the shard count changed, or a row was written
        # around the doors) would sit where no cycle looks, or fold out of order: moved.
        misplaced = owner.__class__ is str and set(map(_SHARD, owner_rows)) != {
            shard_of(owner, shards)
        }  # (the shards collected in C: this runs per row)
        sessions, owner_episodes, bad = fold_checked(owner_rows)
        yield OwnerFold(
            owner, len(owner_rows), list(sessions.values()), owner_episodes, bad, misplaced
        )


def _folded_owners(shards: int, processes: int) -> Iterator[OwnerFold]:
    """Every owner's fold; with two processes the later half of the owners (by rows) is
    folded by a helper process at the same time, its folds taken as they arrive. The helper
    reads the committed rows: the rebuild's transaction has changed none of them yet."""
    middle = middle_owner() if processes > 1 else None
    if middle is None:
        yield from fold_owners(shards)
        return
    with fanout.Beside(lambda: fold_owners(shards, (middle, None))) as helper:
        for owner in fold_owners(shards, (None, middle)):
            yield owner
            yield from helper.ready()
        yield from helper.rest()


def rebuild(
    progress: Callable[[int], None] | None = None,
    *,
    only_if_repartition_needed: bool = False,
    only_if: Callable[[], bool] | None = None,
    processes: int | None = None,
) -> RebuildResult | None:
    """The door that re-derives every projection row from the canonical rows alone.

    One transaction: every shard lock is held (writers and cycles wait), the rows are
    re-partitioned when OMNIA_PROJECTION_SHARDS changed, the old rows go, every row is folded
    with the same fold the cycle uses (poison rows quarantined), and each watermark is reset
    to its shard's last row. Never run on a timer (seed 003, rule 7); the cycle calls it with
    `only_if_repartition_needed` when the shard count changed, and it answers None when
    another worker re-partitioned first; `only_if` likewise, checked once the locks are held.
    `progress` is called with each owner's row count (a command's progress bar). With two
    `processes` (by default where memory.engine.fanout says a helper would see the same rows)
    a helper process folds half of the owners beside this one; the rows written are the same.
    """
    if processes is None:
        processes = fanout.processes() if fanout.may_fan_out() else 1
    rows_folded = sessions_written = episodes_written = 0
    found: list[problems.Problem] = []
    with transaction.atomic():
        if connection.vendor == "sqlite":
            # Take the writer lock before anything is read (no row locks on SQLite).
            ProjectionShard.objects.update(layout=F("layout"))
        list(ProjectionShard.objects.select_for_update().order_by("shard"))
        if only_if_repartition_needed and not needs_repartition():
            return None
        if only_if is not None and not only_if():
            return None
        relayout_needed = needs_repartition()
        shards = shard_count()
        misplaced: list[str] = []
        MemorySession.objects.all().delete()
        Episode.objects.all().delete()
        pending: list[SessionState] = []
        pending_episodes: list[episodes.EpisodeState] = []
        for owner in _folded_owners(shards, processes):
            if progress is not None:
                progress(owner.rows)
            if owner.misplaced:
                misplaced.append(owner.owner_id)
            rows_folded += owner.rows - len(owner.bad)
            found.extend(owner.bad)
            pending.extend(owner.sessions)
            pending_episodes.extend(owner.episodes)
            if len(pending) >= REBUILD_BATCH:
                sessions_written += insert_sessions(by_recency(pending))
                pending = []
            if len(pending_episodes) >= REBUILD_BATCH:
                episodes_written += episodes.insert_episodes(by_recency(pending_episodes))
                pending_episodes = []
        sessions_written += insert_sessions(by_recency(pending))
        episodes_written += episodes.insert_episodes(by_recency(pending_episodes))
        rows_moved = repartition(misplaced)
        if relayout_needed:
            relayout()
        ensure_shards()
        for shard in ProjectionShard.objects.order_by("shard"):
            last = fetch(
                "SELECT created_at, id FROM buffer_entries WHERE game_save_id = %(save)s "
                "AND shard = %s ORDER BY shard DESC, created_at DESC, id DESC LIMIT 1",
                (shard.shard,),
            )
            created_at, row_id = last[0] if last else (0, "")
            ProjectionShard.objects.filter(shard=shard.shard).update(
                last_created_at=created_at,
                last_id=mark_id(row_id),
                last_cycle_at=timezone.now(),
                last_cycle_rows=0,
            )
        for world_id, clock in WorldObject.objects.filter(type="world").values_list(
            "id", "clock_iso"
        ):
            if clock and not time_key(clock).startswith("~"):  # an unparseable clock closes nothing
                episodes.close_expired(clock, world_id=world_id)
        ClockMark.objects.all().delete()
        ClockMark.objects.bulk_create(
            [ClockMark(world_id=w, clock_iso=c) for w, c in episodes.world_clocks().items()]
        )
        problem_total = problems.replace_all(found)
    return RebuildResult(
        rows_folded=rows_folded,
        sessions=sessions_written,
        episodes=episodes_written,
        problems=problem_total,
        rows_moved=rows_moved,
    )
