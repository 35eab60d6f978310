"""A killed import leaves no process behind: its validator helper dies with it."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest

from memory.models import BufferEntry
from memory.worlds.bulk import BULK_INDEX_ROWS
from tests.helpers import ROOT, big_world, descendants, env_for_test_db, validator_up, wait_until

ROWS = BULK_INDEX_ROWS + 150_000  # large enough for the second process, and to be killed mid-way


def past_start_up(pid: int) -> bool:
    """The helper has taken its first batch: it has imported the validator's code (pydantic's
    compiled core is mapped into it), which it does only after its initializer armed the
    parent-death signal. From then on it validates or waits for batches, as a helper mostly
    does."""
    try:
        return "_pydantic_core" in Path(f"/proc/{pid}/maps").read_text()
    except OSError:
        return False


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"  # a zombie has ended; only its parent's bookkeeping is left


@pytest.mark.skipif(
    not sys.platform.startswith("linux"),
    reason="finds the importer's children through /proc; the parent-death signal it checks is Linux's",
)
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM], ids=["kill-9", "term"])
def test_a_killed_import_leaves_no_child_process(tmp_path, sig):
    source = big_world(tmp_path / "big.sqlite", ROWS)
    importer = subprocess.Popen(
        [sys.executable, "manage.py", "import_omnia", str(source)],
        cwd=ROOT,
        env=env_for_test_db(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    # Wait until the validator helper is up (it starts with the first batch), then kill.
    helpers = validator_up(importer)
    assert helpers, "the import never started its validator helper"
    assert wait_until(lambda: any(map(past_start_up, descendants(importer.pid))), seconds=60)
    helpers |= descendants(importer.pid)
    importer.send_signal(sig)
    assert importer.wait(timeout=30) == -sig  # killed mid-import, not finished
    wait_until(lambda: not any(alive(pid) for pid in helpers), seconds=10)
    assert [pid for pid in helpers if alive(pid)] == []
    assert BufferEntry.every_save.count() == 0  # and the killed import wrote nothing
