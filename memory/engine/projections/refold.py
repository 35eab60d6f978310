"""Refold: re-derive a few owners' projections from their canonical rows, for the one change
the forward-only cycle cannot fold — rows that were deleted (a followed game's handoff deletes
buffer rows; memory.worlds.live applies that).

Per owner it is exactly what rebuild does for every owner, and what verify compares against:
the owner's rows up to its shard's watermark (rows past it are the cycle's, lag not drift),
folded with the cycle's fold, episodes walked and closed by the world clock, problem rows
quarantined again. One transaction under the owners' shard locks, so no cycle folds those
owners meanwhile; the cycle then goes on forward from the stored state as usual.
"""

from __future__ import annotations

from collections.abc import Iterable

from django.db import connection, transaction
from django.db.models import F

from memory.engine.projections import episodes, problems
from memory.engine.projections.rebuild import fold_checked
from memory.engine.projections.rows import owner_rows
from memory.engine.projections.sessions import insert_sessions
from memory.engine.projections.verify import _folded
from memory.engine.shards import ensure_shards, shard_of
from memory.models import Episode, LeakScan, MemorySession, ProjectionProblem, ProjectionShard


def refold_owners(owner_ids: Iterable[str]) -> int:
    """Re-derive these owners' sessions, episodes and problem rows; returns rows folded."""
    owners = sorted(set(owner_ids))
    if not owners:
        return 0
    folded_total = 0
    ensure_shards()
    with transaction.atomic():
        shards = sorted({shard_of(owner) for owner in owners})
        locked = ProjectionShard.objects.filter(shard__in=shards)
        if connection.vendor == "sqlite":
            locked.update(layout=F("layout"))  # SQLite's writer lock before anything is read
        marks = {
            s.shard: (s.last_created_at, s.last_id)
            for s in locked.select_for_update().order_by("shard")
        }
        all_marks = {
            s.shard: (s.last_created_at, s.last_id) for s in ProjectionShard.objects.all()
        } | marks
        clocks = episodes.owner_clocks(owners)
        for owner in owners:
            rows = _folded(owner_rows(owner), all_marks)
            sessions, walked, bad = fold_checked(rows)
            if walked:
                walked[-1] = episodes.closed_by_clock(walked[-1], clocks.get(owner))
            MemorySession.objects.filter(owner_id=owner).delete()
            Episode.objects.filter(owner_id=owner).delete()
            ProjectionProblem.objects.filter(table_name=problems.TABLE, owner_id=owner).delete()
            insert_sessions(list(sessions.values()))
            episodes.insert_episodes(walked)
            problems.record(bad)
            folded_total += len(rows) - len(bad)
        LeakScan.objects.mark_stale(owners)
    return folded_total
