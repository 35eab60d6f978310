"""Rebuild and verify: the same fold over every canonical row (seed 003, rule 7).

`rebuild` re-derives every projection row in one transaction; `verify` folds afresh, writes
nothing and reports drift. Rebuild = incremental is structural: both use the cycle's fold.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from operator import attrgetter, itemgetter
from typing import Any, NamedTuple, TypeVar

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
    SESSION_FIELDS,
    SessionState,
    fold_owner,
    fold_session,
    insert_sessions,
    session_hash,
    session_values,
)
from memory.engine.shards import (
    ensure_shards,
    needs_repartition,
    relayout,
    repartition,
    shard_count,
    shard_of,
    stored_layout,
)
from memory.models import (
    ClockMark,
    Episode,
    MemorySession,
    ProjectionProblem,
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


@dataclass
class VerifyResult:
    sessions: int
    identical: int
    drift: list[dict[str, Any]]
    episodes: int = 0
    episodes_identical: int = 0
    episode_drift: list[dict[str, Any]] = field(default_factory=list)
    # Rows in a shard no cycle visits under the configured OMNIA_PROJECTION_SHARDS, and the
    # shard count the rows are partitioned for: either differing is drift (a rebuild, or the
    # next cycle, re-partitions).
    stranded_rows: int = 0
    shards_configured: int = 0
    shards_stored: int = 0
    # Quarantined rows: found by folding afresh vs recorded; a difference is drift.
    problems: int = 0
    problems_recorded: int = 0
    problem_drift: list[dict[str, Any]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "sessions": self.sessions,
            "identical": self.identical,
            "drift": self.drift,
            "episodes": {
                "episodes": self.episodes,
                "identical": self.episodes_identical,
                "drift": self.episode_drift,
            },
            "shards": {
                "configured": self.shards_configured,
                "stored": self.shards_stored,
                "stranded_rows": self.stranded_rows,
            },
            "problems": {
                "rows": self.problems,
                "recorded": self.problems_recorded,
                "drift": self.problem_drift,
            },
        }

    @property
    def layout_drifted(self) -> bool:
        return bool(self.stranded_rows) or self.shards_configured != self.shards_stored

    @property
    def drifted(self) -> bool:
        return bool(self.drift or self.episode_drift or self.problem_drift or self.layout_drifted)


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


def _drift(owner_id: str, key: str, field_name: str, stored: Any, rebuilt: Any) -> dict[str, Any]:
    return {
        "owner_id": owner_id,
        "session_key": key,
        "field": field_name,
        "stored": stored,
        "rebuilt": rebuilt,
    }


def verify(progress: Callable[[int], None] | None = None) -> VerifyResult:
    """Fold afresh, write nothing, and compare every stored session field by field and by hash.

    Only rows at or before their shard's watermark are folded: rows the cycle has not reached
    yet are lag, not drift.
    """
    marks = {s.shard: (s.last_created_at, s.last_id) for s in ProjectionShard.objects.all()}
    configured = shard_count()
    drift: list[dict[str, Any]] = []
    identical = 0
    seen_owners: set[str] = set()
    rebuilt_total = 0
    stranded = 0
    found: list[problems.Problem] = []

    def compare(owner_id: str, rebuilt: dict[str, SessionState]) -> None:
        nonlocal identical
        stored = {row.session_key: row for row in MemorySession.objects.filter(owner_id=owner_id)}
        for key, state in rebuilt.items():
            row = stored.pop(key, None)
            if row is None:
                drift.append(_drift(owner_id, key, "missing", None, list(session_values(state))))
                continue
            problems = [
                _drift(owner_id, key, name, getattr(row, name), getattr(state, name))
                for name in (*SESSION_FIELDS, "last_key")
                if getattr(row, name) != getattr(state, name)
            ]
            if row.content_hash != session_hash(state):
                problems.append(
                    _drift(owner_id, key, "content_hash", row.content_hash, session_hash(state))
                )
            if problems:
                drift.extend(problems)
            else:
                identical += 1
        for key, row in stored.items():
            drift.append(_drift(owner_id, key, "extra", row.content_hash, None))

    for owner_id, owner_rows in by_owner(iter_rows_owner_major()):
        seen_owners.add(owner_id)
        if progress is not None:
            progress(len(owner_rows))
        stranded += sum(1 for r in owner_rows if not 0 <= r.shard < configured)
        rebuilt, _episodes, bad = fold_checked(_folded(owner_rows, marks), walk=False)
        found.extend(bad)
        rebuilt_total += len(rebuilt)
        compare(owner_id, rebuilt)
    stored_owners = set(MemorySession.objects.values_list("owner_id", flat=True).distinct())
    for owner_id in sorted(stored_owners - seen_owners):
        compare(owner_id, {})
    episodes_total, episodes_identical, episode_drift = _verify_episodes(marks)
    fresh = {m.row_ref: m.reason for m in problems.as_models(found)}
    recorded = dict(
        ProjectionProblem.objects.filter(table_name=problems.TABLE).values_list("row_ref", "reason")
    )
    problem_drift = [
        {"row": ref, "field": "missing", "stored": None, "rebuilt": fresh[ref]}
        for ref in sorted(fresh.keys() - recorded.keys())
    ] + [
        {"row": ref, "field": "extra", "stored": recorded[ref], "rebuilt": None}
        for ref in sorted(recorded.keys() - fresh.keys())
    ]
    return VerifyResult(
        sessions=rebuilt_total,
        identical=identical,
        drift=drift,
        episodes=episodes_total,
        episodes_identical=episodes_identical,
        episode_drift=episode_drift,
        stranded_rows=stranded,
        shards_configured=configured,
        shards_stored=stored_layout(),
        problems=len(fresh),
        problems_recorded=len(recorded),
        problem_drift=problem_drift,
    )


def _folded(owner_rows: list[FoldRow], marks: dict[int, tuple[int, str]]) -> list[FoldRow]:
    """The rows at or before their shard's watermark: what the cycle has folded (or
    quarantined). Rows past it are lag, not drift; rows in a shard with no watermark row
    have never been reached (counted as stranded when no configured shard holds them)."""
    return [r for r in owner_rows if (r.created_at, mark_id(r.id)) <= marks.get(r.shard, (0, ""))]


_EPISODE_FIELDS = (
    "first_at",
    "last_at",
    "first_member_id",
    "last_member_id",
    "member_count",
    "is_open",
)


def _verify_episodes(marks: dict[int, tuple[int, str]]) -> tuple[int, int, list[dict[str, Any]]]:
    """Walk every owner's folded rows afresh, close by its world's clock, compare with the
    stored episodes field by field (one owner's episodes in memory at a time)."""
    clocks = episodes.world_clocks()
    world_of = dict(WorldObject.objects.filter(type="entity").values_list("id", "world_id"))
    total = identical = 0
    drift: list[dict[str, Any]] = []
    seen: set[str] = set()

    def compare(owner_id: str, rebuilt: list[episodes.EpisodeState]) -> None:
        nonlocal identical
        stored = {
            e.ordinal: e for e in Episode.objects.filter(owner_id=owner_id).order_by("ordinal")
        }
        for state in rebuilt:
            row = stored.pop(state.ordinal, None)
            item = {"owner_id": owner_id, "ordinal": state.ordinal}
            if row is None:
                drift.append(
                    {**item, "field": "missing", "stored": None, "rebuilt": list(state[:8])}
                )
                continue
            problems = [
                {
                    **item,
                    "field": name,
                    "stored": getattr(row, name),
                    "rebuilt": getattr(state, name),
                }
                for name in _EPISODE_FIELDS
                if getattr(row, name) != getattr(state, name)
            ]
            drift.extend(problems)
            identical += not problems
        for ordinal in stored:
            drift.append({"owner_id": owner_id, "ordinal": ordinal, "field": "extra"})

    for owner_id, owner_rows in by_owner(iter_rows_owner_major()):
        seen.add(owner_id)
        _sessions, walked, _bad = fold_checked(_folded(owner_rows, marks))
        clock = clocks.get(world_of.get(owner_id) or "")
        if walked:
            walked[-1] = episodes.closed_by_clock(walked[-1], clock)
        total += len(walked)
        compare(owner_id, walked)
    stored_owners = set(Episode.objects.values_list("owner_id", flat=True).distinct())
    for owner_id in sorted(stored_owners - seen):
        compare(owner_id, [])
    return total, identical, drift
