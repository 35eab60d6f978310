"""The first cycle after a large import folds its backlog as a rebuild (issue 25 item 4):
folding forward from nothing is folding from scratch, and rebuild's owner-by-owner fold is
the faster of the two. It lands what the flushes land — sessions, episodes, quarantined rows,
watermarks, clock marks — and every stored leak finding stops being current."""

from __future__ import annotations

from pathlib import Path

from memory.engine.leaks.stored import refresh
from memory.engine.projections import cycle, run_cycle
from memory.engine.shards import shard_of
from memory.models import (
    ClockMark,
    Episode,
    LeakScan,
    MemorySession,
    ProjectionProblem,
    ProjectionShard,
    WorldObject,
)
from memory.worlds.omnia_import import import_omnia
from memory.worlds.synthetic import Shape, generate_omnia_world
from tests.helpers import episode_rows, session_rows
from tests.test_poison import plant, poisons


def _folded() -> tuple:
    return (
        session_rows(),
        episode_rows(),
        sorted(ProjectionProblem.objects.values_list("row_ref", "reason")),
        sorted(ProjectionShard.objects.values_list("shard", "last_created_at", "last_id")),
        sorted(ClockMark.objects.values_list("world_id", "clock_iso")),
    )


def _unfold() -> None:
    """Back to the store the import left: nothing folded."""
    for model in (MemorySession, Episode, ProjectionProblem, ClockMark):
        model.objects.all().delete()
    ProjectionShard.objects.update(last_created_at=0, last_id="")


def test_a_large_first_cycle_folds_as_a_rebuild_what_the_flushes_fold(
    db, tmp_path: Path, monkeypatch, activate_save
):
    path = tmp_path / "harbour.sqlite"
    rows = generate_omnia_world(
        path, Shape.named("uuid-head", rows=1200, entities=10, hot_rows=300)
    )["rows"]
    activate_save(import_omnia(path).save)
    owners = list(WorldObject.objects.filter(type="entity").values_list("id", flat=True))
    for owner, (row_id, intent_json, _reason) in zip(owners, poisons(), strict=False):
        plant(owner, shard_of(owner), row_id, intent_json)
    refresh()  # findings stored before anything is folded: current, with no sessions
    assert LeakScan.objects.filter(stale=False).count() == len(owners)
    rebuilds: list[dict] = []
    real = cycle.rebuild
    monkeypatch.setattr(cycle, "rebuild", lambda *a, **k: rebuilds.append(k) or real(*a, **k))
    monkeypatch.setattr(cycle, "UNFOLDED_REBUILD_ROWS", 1000)

    first = run_cycle()
    assert rebuilds == [{"only_if": cycle.unfolded}]
    assert (first.rows_folded, first.problems_found) == (rows, 4)
    assert LeakScan.objects.filter(stale=False).count() == 0
    as_rebuild = _folded()
    assert run_cycle().rows_folded == 0  # folded: the next cycle goes forward, finding nothing
    assert len(rebuilds) == 1

    _unfold()
    monkeypatch.setattr(cycle, "UNFOLDED_REBUILD_ROWS", 10_000)  # now below: flushes
    flushed = run_cycle(batch_size=100, flush_rows=400)
    assert len(rebuilds) == 1
    assert (flushed.rows_folded, flushed.problems_found) == (rows, 4)
    assert _folded() == as_rebuild
