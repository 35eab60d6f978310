"""The collector's bulk settings (memory/engine/collector.py): in force for the work, the
earlier ones back after it, nested uses leaving the outer one's in place, and the objects
alive before the work frozen only while it runs."""

from __future__ import annotations

import gc

import pytest

from memory.engine.collector import BULK_THRESHOLDS, bulk_collection


@pytest.fixture
def default_collector():
    before = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    yield
    gc.set_threshold(*before)


def test_bulk_settings_hold_for_the_work_and_are_restored(default_collector):
    with bulk_collection():
        assert gc.get_threshold() == BULK_THRESHOLDS
        assert gc.get_freeze_count() > 0
        with bulk_collection():
            assert gc.get_threshold() == BULK_THRESHOLDS
        assert gc.get_threshold() == BULK_THRESHOLDS  # the inner exit leaves the outer's
        assert gc.get_freeze_count() > 0
    assert (gc.get_threshold(), gc.get_freeze_count()) == ((700, 10, 10), 0)


def test_settings_are_restored_when_the_work_raises(default_collector):
    with pytest.raises(RuntimeError), bulk_collection():
        raise RuntimeError("the rebuild failed")
    assert (gc.get_threshold(), gc.get_freeze_count()) == ((700, 10, 10), 0)


def test_cycles_made_during_the_work_are_still_collected(default_collector):
    class Node:
        pass

    with bulk_collection():
        for _ in range(3):
            a, b = Node(), Node()
            a.other, b.other = b, a
        del a, b
        assert gc.collect() >= 6  # the cycles are garbage the collector still finds
