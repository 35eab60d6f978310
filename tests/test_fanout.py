"""A rebuild and a leak rescan in two processes (memory.engine.fanout, issue 25 item 4): a
helper process folds the later half of the owners and scans the later half of the viewers
while this one does the rest. What lands is exactly what one process lands — sessions,
episodes, quarantined rows, misplaced rows moved, findings — and a helper that fails fails the
whole rebuild with nothing written.

The helper reads committed rows, so these tests commit theirs (transactional_db)."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import pytest
from django.db import transaction

from memory.engine import fanout
from memory.engine.leaks import stored
from memory.engine.projections import rows as rows_module
from memory.engine.projections.rebuild import rebuild
from memory.engine.shards import shard_of
from memory.models import (
    BufferEntry,
    Episode,
    LeakFinding,
    LeakScan,
    MemorySession,
    WorldObject,
)
from memory.worlds.omnia_import import import_omnia
from memory.worlds.synthetic import Shape, generate_omnia_world
from tests.test_first_cycle import _folded
from tests.test_poison import plant, poisons

# The module, not the function the package re-exports under the same name.
rebuild_module = importlib.import_module("memory.engine.projections.rebuild")


@pytest.fixture
def harbour(transactional_db, tmp_path: Path, activate_save) -> list[str]:
    """A small generated omnia world imported and committed, with a poison row per shard and
    one owner's row written into the wrong shard; its entity ids."""
    path = tmp_path / "harbour.sqlite"
    generate_omnia_world(path, Shape.named("uuid-head", rows=1500, entities=12, hot_rows=300))
    activate_save(import_omnia(path).save)
    owners = sorted(WorldObject.objects.filter(type="entity").values_list("id", flat=True))
    for owner, (row_id, intent_json, _reason) in zip(owners, poisons(), strict=False):
        plant(owner, shard_of(owner), row_id, intent_json)
    stray = BufferEntry.objects.filter(owner_id=owners[-1]).order_by("created_at").first()
    BufferEntry.objects.filter(uid=stray.uid).update(shard=(shard_of(owners[-1]) + 1) % 4)
    return owners


@pytest.fixture
def helpers_started(monkeypatch) -> list[int]:
    """Counts the helper processes started (each Beside), with every row count shared out."""
    started: list[int] = []
    real = fanout.Beside.__init__

    def counting(self, produce):
        started.append(1)
        real(self, produce)

    monkeypatch.setattr(fanout.Beside, "__init__", counting)
    monkeypatch.setattr(rows_module, "SHARED_ROWS", 1)
    monkeypatch.setattr(stored, "REFRESH_CHUNK", 2)
    return started


def test_a_rebuild_in_two_processes_lands_what_one_process_lands(harbour, helpers_started):
    one = rebuild(processes=1)
    alone = _folded()
    moved_alone = BufferEntry.objects.filter(shard=shard_of(harbour[-1]), owner_id=harbour[-1])
    assert (
        one.rows_moved == 1
        and moved_alone.count() == BufferEntry.objects.filter(owner_id=harbour[-1]).count()
    )

    BufferEntry.objects.filter(uid=moved_alone.order_by("created_at").first().uid).update(
        shard=(shard_of(harbour[-1]) + 1) % 4
    )
    # Drift in each process's half: each finds its own and the parent writes both.
    MemorySession.objects.filter(owner_id=harbour[0]).update(memory_count=0)
    Episode.objects.filter(owner_id=harbour[-2], ordinal=1).update(member_count=0)
    two = rebuild(processes=2)
    assert helpers_started == [1]
    assert (
        MemorySession.objects.filter(owner_id=harbour[0]).count()
        + Episode.objects.filter(owner_id=harbour[-2]).count()
        == two.rows_written
        < one.rows_written
    )
    assert (two.rows_folded, two.sessions, two.episodes, two.problems, two.rows_moved) == (
        one.rows_folded,
        one.sessions,
        one.episodes,
        one.problems,
        1,
    )
    assert one.problems == 4
    assert _folded() == alone


def test_a_rescan_in_two_processes_stores_what_one_process_stores(harbour, helpers_started):
    rebuild(processes=1)
    for viewer, target in zip(harbour, harbour[1:], strict=False):
        # Each viewer's newest line names the next entity by its system id: a leak.
        newest = BufferEntry.objects.filter(owner_id=viewer).order_by("-timestamp").first()
        intent = {"type": "action", "actorId": viewer, "content": f"I wave at {target}."}
        BufferEntry.objects.filter(uid=newest.uid).update(intent_json=json.dumps(intent))
    alone = stored.refresh(processes=1)
    findings = sorted(LeakFinding.objects.values_list("viewer_id", "ordinal", "kind", "text"))
    assert alone.viewers_scanned == len(harbour) and findings  # the harbour's prompts leak

    LeakFinding.objects.all().delete()
    LeakScan.objects.all().delete()
    both = stored.refresh(processes=2)
    assert helpers_started == [1]
    assert (both.viewers_checked, both.viewers_scanned, both.findings_written) == (
        alone.viewers_checked,
        alone.viewers_scanned,
        alone.findings_written,
    )
    assert sorted(LeakFinding.objects.values_list("viewer_id", "ordinal", "kind", "text")) == (
        findings
    )
    assert stored.scan_state().behind == []


def test_a_helper_that_fails_fails_the_rebuild_and_writes_nothing(
    harbour, helpers_started, monkeypatch
):
    rebuild(processes=1)
    before = _folded()
    real = rebuild_module.fold_owners

    def failing_in_the_helper(shards, owners=(None, None), **options):
        if owners[0] is not None:  # the helper's half
            raise RuntimeError("the helper's fold broke")
        return real(shards, owners, **options)

    monkeypatch.setattr(rebuild_module, "fold_owners", failing_in_the_helper)
    with pytest.raises(fanout.HelperFailed, match="the helper's fold broke"):
        rebuild(processes=2)
    assert helpers_started == [1]
    assert _folded() == before


def test_no_helper_inside_a_transaction_the_caller_holds(transactional_db, settings):
    settings.OMNIA_REBUILD_PROCESSES = 2
    assert fanout.may_fan_out()
    with transaction.atomic():
        assert not fanout.may_fan_out()  # a helper could not see this transaction's rows
    settings.OMNIA_REBUILD_PROCESSES = 1
    assert not fanout.may_fan_out()
