"""The incremental cycle: fold every row written past each shard's watermark, forward only.

Nothing is stamped on a canonical row; the cost is proportional to what was written. Every
answer reports `rows_visited`: the rows its queries actually returned.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from django.db import connection, transaction
from django.utils import timezone

from memory.engine.projections import episodes
from memory.engine.projections.rows import CYCLE_BATCH, FoldRow, rows_after
from memory.engine.projections.sessions import (
    SessionState,
    fold_session,
    load_sessions,
    session_key_of,
    upsert_sessions,
)
from memory.engine.shards import ensure_shards, shard_count
from memory.models import ProjectionShard


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


def fold_batch(rows: Sequence[FoldRow], result: CycleResult) -> None:
    """Fold rows (fold order) into their stored sessions and episodes and write them back."""
    pairs = {(r.owner_id, session_key_of(r.conversation_id, r.location_id)) for r in rows}
    states = load_sessions(pairs)
    result.session_rows_read += len(states)
    touched: dict[tuple[str, str], SessionState] = {}
    for row in rows:
        pair = (row.owner_id, session_key_of(row.conversation_id, row.location_id))
        state = fold_session(touched.get(pair) or states.get(pair), row)
        touched[pair] = state
    result.sessions_written += upsert_sessions(list(touched.values()))

    walked = episodes.walk_rows(rows)
    result.episode_rows_read += walked.rows_read
    result.episodes_written += walked.written
    result.rows_folded += len(rows)


def run_cycle(
    shards: Iterable[int] | None = None, *, batch_size: int = CYCLE_BATCH, start: int = 0
) -> CycleResult:
    """One forward-only pass: fold every row written past each shard's watermark.

    Each batch is its own transaction under the shard's lock, so writers on that shard wait
    at most one batch and concurrent cycles never fold a row twice. `start` rotates the
    order (shard `start` first): workers sharing shards begin in different places instead of
    all queueing for shard 0 and skipping in step.
    """
    ensure_shards()
    result = CycleResult()
    ordered = sorted(shards if shards is not None else range(shard_count()))
    if ordered:
        turn = start % len(ordered)
        ordered = ordered[turn:] + ordered[:turn]
    for shard in ordered:
        while True:
            with transaction.atomic():
                claimed = _claim(shard)
                if claimed is None:
                    result.shards_skipped.append(shard)
                    break
                rows = rows_after(shard, claimed.last_created_at, claimed.last_id, batch_size)
                if rows:
                    fold_batch(rows, result)
                    last = rows[-1]
                    ProjectionShard.objects.filter(shard=shard).update(
                        last_created_at=last.created_at,
                        last_id=last.id,
                        last_cycle_at=timezone.now(),
                        last_cycle_rows=len(rows),
                    )
            if len(rows) < batch_size:
                break
    result.rows_visited = result.rows_folded + result.session_rows_read + result.episode_rows_read
    return result
