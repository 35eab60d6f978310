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

from memory.engine.projections.cycle import CycleResult, run_cycle
from memory.engine.projections.rebuild import RebuildResult, rebuild
from memory.engine.projections.registry import (
    MEMORY_PROJECTION_NAMES,
    MEMORY_PROJECTIONS,
    Projection,
)
from memory.engine.projections.verify import VerifyResult, verify

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
