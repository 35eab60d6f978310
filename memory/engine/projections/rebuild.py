"""Rebuild and verify: the same fold over every canonical row (seed 003, rule 7).

`rebuild` re-derives every projection row in one transaction; `verify` folds afresh, writes
nothing and reports drift. Rebuild = incremental is structural: both use the cycle's fold.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction
from django.utils import timezone

from memory.engine.projections import episodes
from memory.engine.projections.rows import REBUILD_BATCH, by_owner, fetch, iter_rows_owner_major
from memory.engine.projections.sessions import (
    SESSION_FIELDS,
    SessionState,
    fold_owner,
    insert_sessions,
    session_hash,
    session_values,
)
from memory.engine.shards import ensure_shards
from memory.models import ClockMark, Episode, MemorySession, ProjectionShard, WorldObject


@dataclass
class RebuildResult:
    rows_folded: int
    sessions: int
    episodes: int


@dataclass
class VerifyResult:
    sessions: int
    identical: int
    drift: list[dict[str, Any]]
    episodes: int = 0
    episodes_identical: int = 0
    episode_drift: list[dict[str, Any]] = field(default_factory=list)

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
        }

    @property
    def drifted(self) -> bool:
        return bool(self.drift or self.episode_drift)


def rebuild(progress: Callable[[int], None] | None = None) -> RebuildResult:
    """The door that re-derives every projection row from the canonical rows alone.

    One transaction: every shard lock is held (writers and cycles wait), the old rows go,
    every row is folded with the same fold the cycle uses, and each watermark is reset to
    its shard's last row. Never run on a timer (seed 003, rule 7). `progress` is called
    with each owner's row count (a command's progress bar).
    """
    ensure_shards()
    rows_folded = sessions_written = episodes_written = 0
    with transaction.atomic():
        list(ProjectionShard.objects.select_for_update().order_by("shard"))
        # On SQLite the delete also takes the writer lock before anything is read.
        MemorySession.objects.all().delete()
        Episode.objects.all().delete()
        pending: list[SessionState] = []
        pending_episodes: list[episodes.EpisodeState] = []
        for _owner, owner_rows in by_owner(iter_rows_owner_major()):
            rows_folded += len(owner_rows)
            if progress is not None:
                progress(len(owner_rows))
            pending.extend(fold_owner(owner_rows).values())
            pending_episodes.extend(episodes.segment(owner_rows))
            if len(pending) >= REBUILD_BATCH:
                sessions_written += insert_sessions(pending)
                pending = []
            if len(pending_episodes) >= REBUILD_BATCH:
                episodes_written += episodes.insert_episodes(pending_episodes)
                pending_episodes = []
        sessions_written += insert_sessions(pending)
        episodes_written += episodes.insert_episodes(pending_episodes)
        for shard in ProjectionShard.objects.order_by("shard"):
            last = fetch(
                "SELECT created_at, id FROM buffer_entries WHERE shard = %s "
                "ORDER BY shard DESC, created_at DESC, id DESC LIMIT 1",
                (shard.shard,),
            )
            created_at, row_id = last[0] if last else (0, "")
            ProjectionShard.objects.filter(shard=shard.shard).update(
                last_created_at=created_at,
                last_id=row_id,
                last_cycle_at=timezone.now(),
                last_cycle_rows=0,
            )
        for world_id, clock in WorldObject.objects.filter(type="world").values_list(
            "id", "clock_iso"
        ):
            if clock:
                episodes.close_expired(clock, world_id=world_id)
        ClockMark.objects.all().delete()
        ClockMark.objects.bulk_create(
            [ClockMark(world_id=w, clock_iso=c) for w, c in episodes.world_clocks().items()]
        )
    return RebuildResult(
        rows_folded=rows_folded, sessions=sessions_written, episodes=episodes_written
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
    drift: list[dict[str, Any]] = []
    identical = 0
    seen_owners: set[str] = set()
    rebuilt_total = 0

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
        folded = [r for r in owner_rows if (r.created_at, r.id) <= marks.get(r.shard, (0, ""))]
        rebuilt = fold_owner(folded)
        rebuilt_total += len(rebuilt)
        compare(owner_id, rebuilt)
    stored_owners = set(MemorySession.objects.values_list("owner_id", flat=True).distinct())
    for owner_id in sorted(stored_owners - seen_owners):
        compare(owner_id, {})
    episodes_total, episodes_identical, episode_drift = _verify_episodes(marks)
    return VerifyResult(
        sessions=rebuilt_total,
        identical=identical,
        drift=drift,
        episodes=episodes_total,
        episodes_identical=episodes_identical,
        episode_drift=episode_drift,
    )


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
        folded = [r for r in owner_rows if (r.created_at, r.id) <= marks.get(r.shard, (0, ""))]
        walked = episodes.segment(folded)
        clock = clocks.get(world_of.get(owner_id) or "")
        if walked:
            walked[-1] = episodes.closed_by_clock(walked[-1], clock)
        total += len(walked)
        compare(owner_id, walked)
    stored_owners = set(Episode.objects.values_list("owner_id", flat=True).distinct())
    for owner_id in sorted(stored_owners - seen):
        compare(owner_id, [])
    return total, identical, drift
