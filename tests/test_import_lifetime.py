"""A killed import leaves no process behind: its validator helper dies with it."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from memory.models import BufferEntry
from memory.worlds.bulk import BULK_INDEX_ROWS
from memory.worlds.ddl import OMNIA_V1_DDL
from tests.helpers import ROOT, child_env

ROWS = BULK_INDEX_ROWS + 150_000  # large enough for the second process, and to outlive SETTLE
SETTLE = 1.5


def big_world(path: Path, rows: int = ROWS) -> Path:
    conn = sqlite3.connect(path)
    conn.executescript(OMNIA_V1_DDL)
    conn.execute(
        "INSERT INTO objects VALUES ('big-world', 'world', NULL, '2026-07-06T12:00:00.000Z', "
        "NULL, NULL)"
    )
    conn.execute("INSERT INTO objects VALUES ('ann', 'entity', 'big-world', NULL, 'hall', NULL)")
    intent = (
        '{"type":"action","originalText":"x","description":"waits","actorId":"ann","targetIds":[]}'
    )
    conn.executemany(
        "INSERT INTO buffer_entries VALUES (?, 'ann', ?, 'hall', ?, NULL)",
        (
            (f"row-{i:06d}", f"2026-07-06T12:{i // 1000 % 60:02d}:{i % 60:02d}.000Z", intent)
            for i in range(rows)
        ),
    )
    conn.commit()
    conn.close()
    return path


def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        tree.setdefault(ppid, []).append(int(entry))
    return tree


def descendants(pid: int) -> set[int]:
    tree, found, todo = _children(), set(), [pid]
    while todo:
        for child in tree.get(todo.pop(), []):
            found.add(child)
            todo.append(child)
    return found


def cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def validator_up(importer: subprocess.Popen, timeout: float = 60) -> set[int]:
    """Wait until the import's validator helper is up (it starts with the first batch of rows
    going in) and return its pids; empty if the import ended or the time ran out first."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and importer.poll() is None:
        helpers = {pid for pid in descendants(importer.pid) if b"multiprocessing" in cmdline(pid)}
        if helpers:
            return helpers
        time.sleep(0.02)
    return set()


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
    source = big_world(tmp_path / "big.sqlite")
    importer = subprocess.Popen(
        [sys.executable, "manage.py", "import_omnia", str(source)],
        cwd=ROOT,
        env=child_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    # Wait until the validator helper is up (it starts with the first batch), then kill.
    helpers = validator_up(importer)
    assert helpers, "the import never started its validator helper"
    time.sleep(SETTLE)  # past its start-up: waiting for batches, as a helper mostly is
    helpers |= descendants(importer.pid)
    importer.send_signal(sig)
    assert importer.wait(timeout=30) == -sig  # killed mid-import, not finished
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(alive(pid) for pid in helpers):
        time.sleep(0.05)
    assert [pid for pid in helpers if alive(pid)] == []
    assert BufferEntry.every_save.count() == 0  # and the killed import wrote nothing
