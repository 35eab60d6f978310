"""Rebuild and verify: the same fold over every canonical row (seed 003, rule 7).

`rebuild` re-derives every projection row in one transaction, writing only the rows that
differ from what is stored (memory.engine.projections.differences); `verify` folds afresh,
writes nothing and reports drift. Rebuild = incremental is structural: both use the cycle's
fold.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from operator import itemgetter

from django.db import connection, transaction
from django.db.models import F
from django.utils import timezone

from memory.active_save import scoped_rows
from memory.engine import fanout
from memory.engine.clock import time_key
from memory.engine.projections import episodes, problems
from memory.engine.projections.differences import (
    DIFF_OWNERS,
    OwnerFold,
    Writes,
    diffed,
    stored_owners,
)
from memory.engine.projections.rows import (
    FoldRow,
    by_owner,
    iter_rows_owner_major,
    mark_id,
    middle_owner,
)
from memory.engine.projections.sessions import (
    SessionState,
    fold_owner,
    fold_session,
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
    # Sessions and episodes written: those the fold found missing or different (none when
    # the stored projections were right).
    rows_written: int = 0


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


def fold_owners(
    shards: int, owners: tuple[str | None, str | None] = (None, None), *, compare: bool = True
) -> Iterator[OwnerFold]:
    """Every owner's fold, owner by owner (of the owners in `owners`, as iter_rows_owner_major
    bounds them), each with what differs from its stored rows; then the owners that have
    stored rows and no canonical row left (everything of theirs goes). Without `compare`
    (nothing is stored) every fold is new."""
    clocks = episodes.world_clocks()
    world_of = dict(WorldObject.objects.values_list("id", "world_id"))
    seen: set[str] = set()
    batch: list[tuple[str, int, list, list, list, bool]] = []
    for owner, owner_rows in by_owner(iter_rows_owner_major(owners=owners)):
        # Rows outside their owner's shard (the shard count changed, or a row was written
        # around the doors) would sit where no cycle looks, or fold out of order: moved.
        misplaced = owner.__class__ is str and set(map(_SHARD, owner_rows)) != {
            shard_of(owner, shards)
        }  # (the shards collected in C: this runs per row)
        sessions, owner_episodes, bad = fold_checked(owner_rows)
        if owner_episodes:  # as the clock leaves it (rebuild's close_expired, below)
            clock = clocks.get(world_of.get(owner) or "")
            owner_episodes[-1] = episodes.closed_by_clock(owner_episodes[-1], clock)
        seen.add(owner)
        batch.append(
            (owner, len(owner_rows), list(sessions.values()), owner_episodes, bad, misplaced)
        )
        if len(batch) >= DIFF_OWNERS:
            yield from diffed(batch, compare)
            batch = []
    if batch:
        yield from diffed(batch, compare)
    if not compare:
        return
    for owner in sorted(stored_owners(owners) - seen):
        yield OwnerFold(owner, 0, 0, 0, [], (None, []), [], False)


# The helper's share of the owners (by rows) when the store holds no projection row yet (the
# first cycle after an import): this process then writes every row both fold, and folds less.
# Measured on the 1M-row bench world (SQLite, fold and write): 11.5 s at a half, both
# processes' CPU 7.0 / 5.1 s; at this share 11.3-11.5 s, 5.6-5.9 / 5.9-6.0 s.
WRITING_HELPER_SHARE = 0.65


def _folded_owners(shards: int, processes: int, fresh: bool) -> Iterator[OwnerFold]:
    """Every owner's fold; with two processes the later owners (about half of the rows, more
    when the store is `fresh` and this process writes every row) are folded by a helper
    process at the same time, its folds taken as they arrive. The helper reads the committed
    rows: the rebuild's transaction has changed none of them yet, and changes only what the
    fold of an owner found different, after that owner was read."""
    share = WRITING_HELPER_SHARE if fresh else 0.5
    middle = middle_owner(share) if processes > 1 else None
    if middle is None:
        yield from fold_owners(shards, compare=not fresh)
        return
    with fanout.Beside(lambda: fold_owners(shards, (middle, None), compare=not fresh)) as helper:
        for owner in fold_owners(shards, (None, middle), compare=not fresh):
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
    rows_folded = sessions_folded = episodes_folded = 0
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
        writes = Writes()
        # No projection row at all (an import's first cycle): nothing to compare with.
        fresh = not (MemorySession.objects.exists() or Episode.objects.exists())
        for owner in _folded_owners(shards, processes, fresh):
            if progress is not None and owner.rows:
                progress(owner.rows)
            if owner.misplaced:
                misplaced.append(owner.owner_id)
            rows_folded += owner.rows - len(owner.bad)
            sessions_folded += owner.sessions
            episodes_folded += owner.episodes
            found.extend(owner.bad)
            writes.add(owner)
        writes.flush()
        rows_moved = repartition(misplaced)
        if relayout_needed:
            relayout()
        ensure_shards()
        for shard in ProjectionShard.objects.order_by("shard"):
            last = scoped_rows(
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
        sessions=sessions_folded,
        episodes=episodes_folded,
        rows_written=writes.written,
        problems=problem_total,
        rows_moved=rows_moved,
    )
