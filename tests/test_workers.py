"""Projection workers as real processes: `run_projections --loop` folds what is written while it
runs and exits 0 on SIGTERM/SIGINT; on PostgreSQL a NOTIFY wakes it, two workers share the
shards without folding a row twice, and a worker SIGKILLed mid-batch loses nothing.

The workers are subprocesses pointed at the test database itself (a file on SQLite, the
test_ database on PostgreSQL), so these tests commit for real (transaction=True)."""

from __future__ import annotations

import json
import select
import signal
import subprocess
import sys
import time

import pytest
from django.db import connection, transaction

from memory.engine.projections import rebuild, run_cycle, verify
from memory.engine.projections.worker import parse_shards, projection_status
from memory.engine.shards import notify_written, shard_count
from memory.models import MemorySession, ProjectionShard
from tests.helpers import ROOT, env_for_test_db, episode_rows, session_rows, wait_until, write

pytestmark = pytest.mark.django_db(transaction=True)
on_postgres = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="needs PostgreSQL (row locks, LISTEN/NOTIFY)"
)


def start_worker(*args: str) -> subprocess.Popen:
    """A running worker: returns once it says it started (its SIGTERM handler is in place),
    so a test that stops it quickly never kills a process that is still starting."""
    proc = subprocess.Popen(
        [sys.executable, "manage.py", "run_projections", "--loop", "--json", *args],
        cwd=ROOT,
        env=env_for_test_db(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    first = proc.stdout.readline()
    assert json.loads(first)["started"] is True, (first, proc.poll())
    return proc


def folded_total() -> int:
    return sum(MemorySession.objects.values_list("memory_count", flat=True))


def cycle_report(proc: subprocess.Popen, seconds: float = 30.0) -> dict:
    """The worker's next line: the report it prints when a cycle that folded rows has ended,
    just before it goes back to waiting. {} if none came in time."""
    ready, _, _ = select.select([proc.stdout], [], [], seconds)
    line = proc.stdout.readline() if ready else ""
    return json.loads(line) if line.strip() else {}


def stop(proc: subprocess.Popen, sig: int = signal.SIGTERM) -> tuple[int, str, str]:
    proc.send_signal(sig)
    try:
        out, err = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        pytest.fail(f"worker did not stop on {sig}: {err}")
    return proc.returncode, out, err


def summary_of(out: str) -> dict:
    return json.loads(out.strip().splitlines()[-1])


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_loop_folds_rows_written_while_running_and_exits_cleanly(cast, sig):
    for i in range(10):
        write(("alice", "bob", "charlie")[i % 3], i, conversation=f"c{i % 4}")
    proc = start_worker("--poll", "0.2")
    try:
        assert wait_until(lambda: folded_total() == 10), proc.stderr
        # Rows written after the worker started are folded too, without restarting it.
        for i in range(10, 25):
            write(("alice", "bob", "charlie")[i % 3], i, conversation=f"c{i % 4}")
        assert wait_until(lambda: folded_total() == 25)
    finally:
        code, out, err = stop(proc, sig)
    assert code == 0, err
    assert "Traceback" not in err
    summary = summary_of(out)
    assert summary["stopped_by"] == sig
    assert summary["rows_folded"] == 25
    assert summary["errors"] == 0
    assert verify().drift == []
    assert projection_status()["lag_rows"] == 0


def test_projection_status_reports_lag_per_shard_and_writes_nothing(cast):
    for i in range(7):
        write(("alice", "bob", "charlie")[i % 3], i)
    shards_before = ProjectionShard.objects.count()
    status = projection_status()
    assert status["lag_rows"] == 7
    assert status["shard_count"] == shard_count() == len(status["shards"])
    assert sum(s["rows_behind"] for s in status["shards"]) == 7
    assert ProjectionShard.objects.count() == shards_before
    had_rows = {s["shard"] for s in status["shards"] if s["rows_behind"]}
    run_cycle()
    status = projection_status()
    assert status["lag_rows"] == 0
    # On PostgreSQL a cycle stamps only the shards it folded something into.
    assert all(s["last_cycle_at"] for s in status["shards"] if s["shard"] in had_rows)
    assert {s["shard"] for s in status["shards"]} == set(range(shard_count()))


def test_loop_on_some_shards_leaves_the_others(cast):
    for i in range(12):
        write(("alice", "bob", "charlie")[i % 3], i)
    assert parse_shards("0") == [0]
    with pytest.raises(ValueError):
        parse_shards(str(shard_count()))
    with pytest.raises(ValueError):  # a digit int() refuses, not a traceback
        parse_shards("²")
    behind = [s["rows_behind"] for s in projection_status()["shards"]]
    proc = start_worker("--poll", "0.2", "--shards", "0")
    try:
        assert wait_until(lambda: projection_status()["shards"][0]["rows_behind"] == 0)
    finally:
        code, _out, err = stop(proc)
    assert code == 0, err
    # Shards 1.. are untouched: whatever landed there is still behind.
    assert [s["rows_behind"] for s in projection_status()["shards"]][1:] == behind[1:]
    run_cycle()
    assert projection_status()["lag_rows"] == 0
    assert folded_total() == 12


@on_postgres
def test_notify_wakes_a_listening_worker_long_before_its_poll(cast):
    proc = start_worker("--poll", "120")
    try:
        # The first row is folded by the worker's first cycle; then it waits (poll 120 s).
        write("alice", 1)
        # Its first cycle folded that row and ended: the worker is back to waiting.
        assert cycle_report(proc).get("rows_folded") == 1
        with transaction.atomic():
            write("alice", 2)
            notify_written()
        # A timeout guard, not the thing tested: the next poll is 120 s away.
        assert wait_until(lambda: folded_total() == 2, seconds=20)
    finally:
        code, out, err = stop(proc)
    assert code == 0, err
    summary = summary_of(out)
    # Row 2 was folded well before the 120 s poll, so a NOTIFY woke the worker.
    assert summary["rows_folded"] == 2, summary
    assert summary["wakeups"] >= 1, summary
    assert verify().drift == []


@on_postgres
def test_two_workers_share_the_shards_and_fold_each_row_once(cast):
    owners = ("alice", "bob", "charlie")
    workers = [start_worker("--poll", "0.2") for _ in range(2)]
    try:
        for i in range(150):
            with transaction.atomic():
                write(owners[i % 3], i % 50, conversation=f"c{i % 9}" if i % 2 else None)
                notify_written()
        assert wait_until(lambda: projection_status()["lag_rows"] == 0, seconds=60)
    finally:
        results = [stop(w) for w in workers]
    assert [code for code, _, _ in results] == [0, 0], [err for _, _, err in results]
    folded = [summary_of(out)["rows_folded"] for _, out, _ in results]
    assert sum(folded) == 150, folded
    assert folded_total() == 150
    assert verify().drift == []
    concurrent = (session_rows(), episode_rows())
    rebuild()
    assert (session_rows(), episode_rows()) == concurrent


KILLED_MID_BATCH = """
import os, sys, time
import django
django.setup()
from memory.engine.projections import cycle
original = cycle.fold_batch
calls = []
def slow(rows, result):
    original(rows, result)
    calls.append(len(rows))
    if len(calls) == 3:
        # Batch 3 is folded but its transaction is still open: the parent SIGKILLs us here.
        print("mid-batch", flush=True)
        time.sleep(120)
cycle.fold_batch = slow
from memory.active_save import use
from memory.models import Save
with use(Save.objects.get(name="cast")):
    cycle.run_cycle(batch_size=20, flush_rows=40)  # two chunks per committed flush
print("finished", flush=True)
"""


@on_postgres
def test_sigkill_mid_cycle_loses_nothing_and_folds_nothing_twice(cast):
    owners = ("alice", "bob", "charlie")
    for i in range(150):
        write(owners[i % 3], i % 40, conversation=f"c{i % 5}" if i % 3 else None)
    proc = subprocess.Popen(
        [sys.executable, "-c", KILLED_MID_BATCH],
        cwd=ROOT,
        env={**env_for_test_db(), "DJANGO_SETTINGS_MODULE": "omnia_site.settings"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    line = proc.stdout.readline().strip()
    assert line == "mid-batch", proc.stderr.read()
    committed_before_kill = 150 - projection_status()["lag_rows"]
    # One flush of two chunks committed (its watermark moved); the next is folded, uncommitted.
    assert 0 < committed_before_kill < 150
    proc.send_signal(signal.SIGKILL)
    proc.wait(10)
    # The server notices the dead client and drops its lock; until then the shard is skipped.
    assert wait_until(
        lambda: not run_cycle().shards_skipped and projection_status()["lag_rows"] == 0
    )
    assert folded_total() == 150  # every row counted exactly once
    assert verify().drift == []
    concurrent = (session_rows(), episode_rows())
    rebuild()
    assert (session_rows(), episode_rows()) == concurrent


@on_postgres
def test_settle_folds_a_burst_of_notified_writes_in_one_cycle(cast):
    # A settle window far longer than the burst takes even on a loaded CI machine (at 1.5 s,
    # ten writes under the other xdist worker's load once spilled into a second window).
    settle = 5.0
    # Written before the worker starts, so its first cycle folds it: written after, it raced
    # that cycle, and a loaded CI machine let the cycle read nothing and a wake-up fold the
    # row, a cycle more than the burst's (cycles 3, wakeups 2).
    write("alice", 1)
    proc = start_worker("--poll", "120", "--settle", str(settle))
    try:
        # Its first cycle folded that row and ended: the worker is back to waiting.
        assert cycle_report(proc).get("rows_folded") == 1
        # Ten writes, ten NOTIFYs, well inside the settle window.
        started = time.monotonic()
        for i in range(2, 12):
            with transaction.atomic():
                write(("alice", "bob")[i % 2], i)
                notify_written()
        burst = time.monotonic() - started
        assert burst < settle, f"the burst itself took {burst:.1f} s"
        assert wait_until(lambda: folded_total() == 11, seconds=30)
    finally:
        code, out, err = stop(proc)
    assert code == 0, err
    summary = summary_of(out)
    assert summary["rows_folded"] == 11
    # The first cycle, then one for the whole burst (without settle: up to ten).
    assert summary["cycles"] == 2, summary
    assert verify().drift == []


def test_settle_must_not_be_negative(cast):
    done = subprocess.run(
        [sys.executable, "manage.py", "run_projections", "--loop", "--settle", "-1"],
        cwd=ROOT,
        env=env_for_test_db(),
        capture_output=True,
        text=True,
    )
    assert done.returncode == 1
    assert done.stderr.strip() == "CommandError: --settle must be 0 or a positive number of seconds"


def test_cycle_start_rotates_the_shard_order(cast, monkeypatch):
    from memory.engine.projections import cycle

    tried: list[int] = []

    def held_by_someone_else(shard: int):
        tried.append(shard)
        return None

    monkeypatch.setattr(cycle, "_claim", held_by_someone_else)
    count = shard_count()
    result = run_cycle(start=count + 1)  # wraps: shard 1 first
    expected = [*range(1, count), 0]
    assert tried == expected
    assert result.shards_skipped == expected
    tried.clear()
    run_cycle(shards=[0, 2], start=1)
    assert tried == [2, 0]
