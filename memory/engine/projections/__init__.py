"""Memory projections: derived rows folded from the canonical memory rows (seed 003).

A projection is a row that is a pure function of the canonical rows, rebuildable from them
alone. Today the closed registry names one, `session`: one row per (owner, session key) with
exact terms only — first_at (min world time), last_at (max), memory_count and dialogue_count
(historical sums: a retracted row still happened and still counts), last_member_id (the last
row in fold order) — plus a content hash. No author and no stability: a projection row is not
a memory, so nothing can fold it back in as input.

One fold, two callers. `run_cycle` folds the rows written past each shard's watermark
(forward-only; nothing is stamped on a canonical row; cost proportional to what was written),
and `rebuild` folds every row with the same function. That is why rebuild = incremental is
structural; `verify` proves it on the fields and on the hash without writing.

Every answer reports `rows_visited`: the rows its queries actually returned (canonical rows
plus projection/episode rows), never an estimate. The watermark row itself is bookkeeping and
is not counted.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from memory.engine.projections import doors
from memory.engine.projections.cycle import CycleResult, run_cycle
from memory.engine.projections.rebuild import RebuildResult, VerifyResult, rebuild, verify
from memory.engine.projections.sessions import fold_session

__all__ = [
    "MEMORY_PROJECTIONS",
    "MEMORY_PROJECTION_NAMES",
    "CycleResult",
    "Projection",
    "RebuildResult",
    "VerifyResult",
    "rebuild",
    "run_cycle",
    "verify",
]


# --- the closed registry -----------------------------------------------------------------------


@dataclass(frozen=True)
class Projection:
    """A projection is a name, a fold and a door, registered together or not at all."""

    name: str
    fold: Callable[..., Any]
    door: Callable[..., Any]

    def __post_init__(self) -> None:
        if not self.name:
            raise TypeError("a memory projection needs a name")
        if not callable(self.fold):
            raise TypeError(f"memory projection {self.name!r} registered without a fold")
        if not callable(self.door):
            raise TypeError(f"memory projection {self.name!r} registered without a door")


def _registry(*projections: Projection) -> dict[str, Projection]:
    names = [p.name for p in projections]
    if len(set(names)) != len(names):
        raise TypeError(f"memory projection registered twice: {names}")
    return {p.name: p for p in projections}


MEMORY_PROJECTIONS: dict[str, Projection] = _registry(
    Projection(name="session", fold=fold_session, door=doors.sessions),
)
MEMORY_PROJECTION_NAMES: frozenset[str] = frozenset(MEMORY_PROJECTIONS)
