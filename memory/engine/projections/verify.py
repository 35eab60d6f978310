"""Verify: fold afresh, write nothing, and compare with what is stored (seed 003, rule 7).

The same fold as rebuild (rebuild = incremental is structural): every stored session field
by field and by hash, the episodes, the quarantined rows and the shard layout; rows past a
shard's watermark are lag, not drift.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from memory.engine.projections import episodes, problems
from memory.engine.projections.rebuild import fold_checked
from memory.engine.projections.rows import FoldRow, by_owner, iter_rows_owner_major, mark_id
from memory.engine.projections.sessions import (
    SESSION_FIELDS,
    SessionState,
    session_hash,
    session_values,
)
from memory.engine.shards import shard_count, stored_layout
from memory.models import Episode, MemorySession, ProjectionProblem, ProjectionShard, WorldObject


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
