"""Upkeep: one pass of everything derived from the canonical rows and the world — the
projection cycle, then the stored leak findings of every viewer whose prompt moved.

The workers (`run_projections`, `--loop`), the overview's button and the API run this; the
projections package itself knows nothing of leaks (it only marks the owners it folded).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable

from django.db import DatabaseError

from memory.active_save import use
from memory.engine.collector import bulk_collection
from memory.engine.leaks import stored
from memory.engine.planner import BULK_ROWS, LEAK_TABLES, PROJECTION_TABLES, refresh_statistics
from memory.engine.projections import (
    CycleResult,
    RebuildResult,
    VerifyResult,
    problems,
    rebuild,
    run_cycle,
    verify,
)
from memory.engine.saves import live_saves, purge_retired
from memory.models import LeakFinding, LeakScan

logger = logging.getLogger(__name__)


def run_upkeep(shards: Iterable[int] | None = None, **cycle_options) -> CycleResult:
    """One upkeep pass over the active save."""
    with bulk_collection():
        return _upkeep(shards, **cycle_options)


def _upkeep(shards: Iterable[int] | None = None, **cycle_options) -> CycleResult:
    result = run_cycle(shards, **cycle_options)
    if result.rows_folded >= BULK_ROWS:
        # The first cycle after an import writes most of the projection tables: leave their
        # statistics current before the leak scan reads them (and before pages do).
        refresh_statistics(PROJECTION_TABLES)
    refreshed = stored.refresh()
    result.leak_viewers_scanned = refreshed.viewers_scanned
    result.leak_findings_written = refreshed.findings_written
    if result.rows_folded >= BULK_ROWS:
        refresh_statistics(LEAK_TABLES)
    return result


def run_upkeep_every_save(shards: Iterable[int] | None = None, **cycle_options) -> CycleResult:
    """One upkeep pass over each save in turn (a worker's cycle), after purging the saves a
    --replace retired long enough ago; the results summed."""
    purge_retired()
    total = CycleResult()
    shards = list(shards) if shards is not None else None
    for save in live_saves():
        # One save's failure (a helper that raises on its data) is that save's, reported by
        # name; it never stops the others (issue 29). The database itself failing is everyone's.
        try:
            with use(save):
                result = run_upkeep(shards, **cycle_options)
                problems.cycle_passed()
        except DatabaseError:
            raise
        except Exception as exc:
            logger.exception("upkeep of save %r failed; the other saves go on", save.name)
            total.failed_saves.append(f"{save.name}: {type(exc).__name__}: {exc}"[:300])
            with use(save):
                problems.cycle_failed(exc)  # a problem row of that save: its page says so
            continue
        total.add(result)
    return total


def rebuild_all(
    progress: Callable[[int], None] | None = None,
) -> tuple[RebuildResult, stored.RefreshResult]:
    """Re-derive every projection row and every stored finding from the store alone."""
    with bulk_collection():
        return _rebuild_all(progress)


def _rebuild_all(
    progress: Callable[[int], None] | None = None,
) -> tuple[RebuildResult, stored.RefreshResult]:
    rebuilt = rebuild(progress)
    if rebuilt.rows_written or rebuilt.rows_moved:  # else the tables are as they were
        refresh_statistics(PROJECTION_TABLES)
    LeakFinding.objects.all().delete()
    LeakScan.objects.all().delete()
    refreshed = stored.refresh()
    refresh_statistics(LEAK_TABLES)  # rewritten whole
    return rebuilt, refreshed


def verify_all(
    progress: Callable[[int], None] | None = None,
) -> tuple[VerifyResult, stored.FindingsVerifyResult]:
    with bulk_collection():
        return verify(progress), stored.verify()
