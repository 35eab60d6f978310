"""The collector's bulk settings (memory/engine/collector.py): in force for the work, the
earlier ones back after it, nested uses leaving the outer one's in place, and the objects
alive before the work frozen only while it runs. And the web worker's: set once it has
started (omnia_site/wsgi.py), in a process of its own as gunicorn loads it."""

from __future__ import annotations

import gc
import subprocess
import sys

import pytest

from memory.engine.collector import BULK_THRESHOLDS, WORKER_THRESHOLDS, bulk_collection
from tests.cli import ROOT, isolated_env


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


def test_the_web_worker_freezes_what_start_up_made_and_collects_young_objects_less_often(
    tmp_path,
):
    loads_the_app = (
        "import gc\n"
        "before = gc.get_threshold()\n"
        "from omnia_site.wsgi import application\n"
        "from django.apps import apps\n"
        "print(before, gc.get_threshold(), apps.ready, gc.get_freeze_count() > 10_000)\n"
    )
    env = isolated_env(tmp_path / "store.sqlite3", DJANGO_SETTINGS_MODULE="omnia_site.settings")
    done = subprocess.run(
        [sys.executable, "-c", loads_the_app],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert done.stdout.split("\n")[-2] == f"(700, 10, 10) {WORKER_THRESHOLDS} True True"
