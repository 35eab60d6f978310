"""The incremental cycle: fold every row written past each shard's watermark, forward only.

Nothing is stamped on a canonical row; the cost is proportional to what was written. Every
answer reports `rows_visited`: the rows its queries actually returned.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from django.db import connection, transaction
from django.utils import timezone

from memory.engine.projections import episodes, problems
from memory.engine.projections.differences import by_recency
from memory.engine.projections.rebuild import rebuild
from memory.engine.projections.rows import CYCLE_BATCH, FoldRow, mark_id, rows_after
from memory.engine.projections.sessions import (
    SessionState,
    fold_session,
    load_sessions,
    session_key_of,
    upsert_sessions,
)
from memory.engine.shards import ensure_shards, needs_repartition, shard_count
from memory.models import (
    BufferEntry,
    Episode,
    LeakScan,
    MemorySession,
    ProjectionProblem,
    ProjectionShard,
)

# A flush is one transaction: it ends after this many sessions held in memory (about 300 bytes
# each; rows are not held) or rows folded (how long writers on the shard wait for its lock:
# a million rows is about ten seconds here, the first cycle after a large import).
FLUSH_ROWS = 1_000_000
FLUSH_SESSIONS = 100_000
# A backlog this large with nothing folded yet is folded as a rebuild (planner.BULK_ROWS: the
# first cycle after an import); smaller first cycles fold forward in flushes as any other.
UNFOLDED_REBUILD_ROWS = 50_000


@dataclass
class CycleResult:
    rows_visited: int = 0
    rows_folded: int = 0
    sessions_written: int = 0
    episodes_written: int = 0
    # rows_visited, broken down: canonical + session + episode rows the queries returned.
    session_rows_read: int = 0
    episode_rows_read: int = 0
    shards_skipped: list[int] = field(default_factory=list)
    # Set by memory.engine.upkeep, which refreshes the leak findings after the fold.
    episodes_closed: int = 0  # open episodes the world clock has passed, closed this cycle
    leak_viewers_scanned: int = 0
    leak_findings_written: int = 0
    # Rows quarantined this cycle (memory.engine.projections.problems), and whether the cycle
    # found OMNIA_PROJECTION_SHARDS changed and re-partitioned (a rebuild, in one transaction).
    problems_found: int = 0
    repartitioned: bool = False
    # A pass over every save: "name: what failed" for each save whose upkeep raised (the other
    # saves were still updated; memory.engine.upkeep).
    failed_saves: list[str] = field(default_factory=list)

    def add(self, other: CycleResult) -> None:
        """Fold another save's cycle into this total (a worker's pass over every save)."""
        for name, value in vars(other).items():
            mine = getattr(self, name)
            if isinstance(value, bool):
                setattr(self, name, mine or value)
            elif isinstance(value, list):
                mine.extend(value)
            else:
                setattr(self, name, mine + value)

    def as_dict(self) -> dict[str, int]:
        return {
            "rows_visited": self.rows_visited,
            "rows_folded": self.rows_folded,
            "sessions_written": self.sessions_written,
        }


def _claim(shard: int) -> ProjectionShard | None:
    """Take one shard's row lock for this transaction, or None when another worker holds it."""
    if connection.vendor == "sqlite":
        # SQLite has no row locks; writing first takes the single writer lock before we read
        # the watermark, so a second cycle waits instead of folding the same rows.
        ProjectionShard.objects.filter(shard=shard).update(last_cycle_at=timezone.now())
        return ProjectionShard.objects.filter(shard=shard).first()
    return ProjectionShard.objects.select_for_update(skip_locked=True).filter(shard=shard).first()


class Flush:
    """One transaction's fold, held in memory: every session and each owner's latest episode
    the rows touch, written back once when the flush ends.

    A backlog (the first cycle after a large import) is read in chunks but written per flush,
    so a session touched by many chunks is loaded once and written once; the flush limits
    (rows and sessions held) bound memory and how long writers on the shard wait.
    """

    def __init__(self, result: CycleResult) -> None:
        self.result = result
        self.sessions: dict[tuple[str, str], SessionState | None] = {}
        self.episode_start: dict[str, episodes.EpisodeState | None] = {}
        self.episode_latest: dict[str, episodes.EpisodeState] = {}
        self.episodes_closed: list[episodes.EpisodeState] = []
        self.problems: list[problems.Problem] = []
        self.rows = 0
        self.gap = episodes.gap()

    def load(self, rows: Sequence[FoldRow]) -> None:
        """Read the stored state of what these rows touch and this flush does not hold yet."""
        pairs = {(r.owner_id, session_key_of(r.conversation_id, r.location_id)) for r in rows}
        new_pairs = pairs - self.sessions.keys()
        if new_pairs:
            stored = load_sessions(new_pairs)
            self.result.session_rows_read += len(stored)
            for pair in new_pairs:
                self.sessions[pair] = stored.get(pair)
        new_owners = list(
            dict.fromkeys(r.owner_id for r in rows if r.owner_id not in self.episode_start)
        )
        if new_owners:
            latest = episodes.latest_episodes(new_owners)
            self.result.episode_rows_read += len(latest)
            for owner_id in new_owners:
                self.episode_start[owner_id] = latest.get(owner_id)
                if owner_id in latest:
                    self.episode_latest[owner_id] = latest[owner_id]

    def fold(self, rows: Sequence[FoldRow]) -> None:
        """Fold rows that passed problems.defect_of; one whose fold raises is quarantined
        (nothing of it is kept: both results are computed before either is stored)."""
        sessions, latest = self.sessions, self.episode_latest
        for row in rows:
            pair = (row.owner_id, session_key_of(row.conversation_id, row.location_id))
            try:
                session = fold_session(sessions[pair], row)
                closed, episode = episodes.step(latest.get(row.owner_id), row, self.gap)
            except Exception as exc:  # a poison row must not stop the fold (issue 14)
                self.problems.append(problems.Problem(row, problems.fold_failure(exc)))
                continue
            sessions[pair], latest[row.owner_id] = session, episode
            if closed is not None:
                self.episodes_closed.append(closed)

    def full(self, flush_rows: int, flush_sessions: int) -> bool:
        return self.rows >= flush_rows or len(self.sessions) >= flush_sessions

    def write(self) -> None:
        touched = by_recency(s for s in self.sessions.values() if s is not None)
        self.result.sessions_written += upsert_sessions(touched)
        clocks = episodes.owner_clocks(list(self.episode_latest))
        changed = self.episodes_closed + [
            episodes.closed_by_clock(state, clocks.get(owner_id))
            for owner_id, state in self.episode_latest.items()
            if state is not self.episode_start.get(owner_id)
        ]
        self.result.episodes_written += episodes.upsert_episodes(by_recency(changed))
        self.result.rows_folded += self.rows - len(self.problems)
        self.result.problems_found += problems.record(self.problems)
        # These owners' digests just moved, so their prompts did: in the flush's transaction,
        # so a fold and its mark land together (memory.engine.leaks.stored rescans them).
        LeakScan.objects.mark_stale({owner_id for owner_id, _key in self.sessions})


def unfolded() -> bool:
    """Nothing of the save folded yet: every watermark at the start and no projection row (the
    store an import leaves). Folding it forward from there is folding it from scratch."""
    return not (
        ProjectionShard.objects.exclude(last_created_at=0, last_id="").exists()
        or MemorySession.objects.exists()
        or Episode.objects.exists()
        or ProjectionProblem.objects.exists()
    )


def _mark_leak_scans_stale_everywhere() -> None:
    """Every digest of the save moved (a first fold): no stored finding is current."""
    LeakScan.objects.filter(stale=False).update(stale=True)


def _big_unfolded_backlog() -> bool:
    """Rows enough that the rebuild's fold pays (BULK_ROWS), none of them folded yet."""
    # unfolded() first: a folded store answers it from the shard rows alone, every cycle.
    return unfolded() and (
        BufferEntry.objects.all()[:UNFOLDED_REBUILD_ROWS].count() >= UNFOLDED_REBUILD_ROWS
    )


def fold_batch(rows: Sequence[FoldRow], flush: Flush) -> None:
    """Fold one chunk of rows (fold order) into the flush's sessions and episodes; rows the
    fold cannot take are quarantined instead (the watermark still moves past them)."""
    good, bad = problems.sift(rows)
    flush.problems.extend(bad)
    flush.load(good)
    flush.fold(good)
    flush.rows += len(rows)


def _fold_shard(
    shard: int,
    result: CycleResult,
    batch_size: int,
    flush_rows: int,
    flush_sessions: int,
    progress: Callable[[int], None] | None = None,
) -> bool:
    """One transaction under the shard's lock: fold chunks past the watermark until the shard
    is drained or the flush is full, write back, move the watermark. False when drained
    (or when another worker holds the shard)."""
    with transaction.atomic():
        claimed = _claim(shard)
        if claimed is None:
            result.shards_skipped.append(shard)
            return False
        flush = Flush(result)
        mark = (claimed.last_created_at, claimed.last_id)
        drained = False
        while not flush.full(flush_rows, flush_sessions):
            rows = rows_after(shard, *mark, batch_size)
            if rows:
                fold_batch(rows, flush)
                mark = (rows[-1].created_at, mark_id(rows[-1].id))
                if progress is not None:
                    progress(len(rows))
            if len(rows) < batch_size:
                drained = True
                break
        if flush.rows:
            flush.write()
            ProjectionShard.objects.filter(shard=shard).update(
                last_created_at=mark[0],
                last_id=mark[1],
                last_cycle_at=timezone.now(),
                last_cycle_rows=flush.rows,
            )
    return not drained


def run_cycle(
    shards: Iterable[int] | None = None,
    *,
    batch_size: int = CYCLE_BATCH,
    start: int = 0,
    flush_rows: int = FLUSH_ROWS,
    flush_sessions: int = FLUSH_SESSIONS,
    progress: Callable[[int], None] | None = None,
) -> CycleResult:
    """One forward-only pass: fold every row written past each shard's watermark.

    Rows are read `batch_size` at a time; each flush (at most `flush_rows` rows or
    `flush_sessions` sessions held) is one transaction under the shard's lock, so concurrent
    cycles never fold a row twice and a killed cycle loses only its open flush, which the
    next cycle folds again from the unchanged watermark. `start` rotates the order (shard
    `start` first): workers sharing shards begin in different places instead of all
    queueing for shard 0 and skipping in step. `progress` is called with each chunk's row
    count (a command's progress bar).
    """
    result = CycleResult()
    if needs_repartition():
        # OMNIA_PROJECTION_SHARDS changed: rows sit in shards no longer visited (or an owner's
        # new rows in another shard than its old ones). Re-partition and re-derive in one
        # transaction, so no row is stranded or folded twice; rare, and on purpose.
        result.repartitioned = rebuild(only_if_repartition_needed=True) is not None
    ensure_shards()
    if shards is None and _big_unfolded_backlog():
        # The first cycle after a large import: folding forward from nothing is a rebuild
        # (rebuild = incremental), and rebuild folds owner by owner, each owner's sessions at
        # once, where the cycle folds row by row across every owner (about 1.5x the time at
        # 1M rows).
        first = rebuild(progress, only_if=unfolded)  # unless another worker began first
        if first is not None:
            _mark_leak_scans_stale_everywhere()
            result.rows_folded, result.problems_found = first.rows_folded, first.problems
            result.sessions_written, result.episodes_written = first.sessions, first.episodes
    ordered = sorted(shards if shards is not None else range(shard_count()))
    if ordered:
        turn = start % len(ordered)
        ordered = ordered[turn:] + ordered[:turn]
    # Episodes also end by the world clock, not only by the next row (seed 003): first the
    # worlds whose clock moved, then each flush closes what it folds.
    result.episodes_closed, open_read = episodes.close_by_clocks()
    result.episode_rows_read += open_read
    for shard in ordered:
        while _fold_shard(shard, result, batch_size, flush_rows, flush_sessions, progress):
            pass
    result.rows_visited = (
        result.rows_folded
        + result.problems_found
        + result.session_rows_read
        + result.episode_rows_read
    )
    return result
