"""Faults as real processes: a writer SIGKILLed mid-abstract lands nothing; a read-only
database makes the commands say so in one line, with no traceback.

(A projection worker SIGKILLed mid-cycle is in test_workers.py; the database unreachable
for the web layer is in test_health.py.)

Read-only SQLite: tests run as root, and chmod 0444 does not stop root from writing, so the
read-only file is simulated with `PRAGMA query_only=1` on every connection the child opens.
SQLite answers that with the very error a 0444 file gives a non-root user ("attempt to write
a readonly database"), so the same code path is exercised.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap

import pytest

from memory.engine.abstract import abstract
from memory.engine.projections import run_cycle
from memory.engine.shards import generation_of
from memory.models import AbstractionEdge, BufferEntry, LedgerEntry, MemorySession
from tests.helpers import ROOT, env_for_test_db, write

pytestmark = pytest.mark.django_db(transaction=True)


def run_child(code: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=ROOT,
        env={**env_for_test_db(), "DJANGO_SETTINGS_MODULE": "omnia_site.settings"},
        capture_output=True,
        text=True,
        timeout=timeout,
    )


KILLED_MID_ABSTRACT = """
import time
import django
django.setup()
from memory.active_save import activate
from memory.engine import abstract as mod
from memory.engine.shards import generation_of
from memory.models import Save

activate(Save.objects.get(name="cast"))

def stall(*args, **kwargs):
    # The rollup is written and the members are marked, all uncommitted: die here.
    print("mid-abstract", flush=True)
    time.sleep(120)

mod._write_edges = stall
mod.abstract("alice", {members!r}, name="The Meeting", body="b",
             expected_generation=generation_of("alice"), rollup_id="R-killed")
"""


def test_writer_killed_mid_abstract_lands_nothing(cast):
    members = [write("alice", 0), write("alice", 1)]
    generation = generation_of("alice")
    proc = subprocess.Popen(
        [sys.executable, "-c", KILLED_MID_ABSTRACT.format(members=members)],
        cwd=ROOT,
        env={**env_for_test_db(), "DJANGO_SETTINGS_MODULE": "omnia_site.settings"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout.readline().strip() == "mid-abstract", proc.stderr.read()
    proc.send_signal(signal.SIGKILL)
    proc.wait(10)
    assert not LedgerEntry.objects.filter(id="R-killed").exists()
    assert not BufferEntry.objects.filter(id__in=members).exclude(abstracted_into=None).exists()
    assert not AbstractionEdge.objects.exists()
    assert generation_of("alice") == generation
    # The killed writer's locks went with it: the same abstract now lands whole.
    rollup = abstract(
        "alice",
        members,
        name="The Meeting",
        body="b",
        expected_generation=generation,
        rollup_id="R-killed",
    )
    assert rollup.id == "R-killed"
    assert BufferEntry.objects.filter(abstracted_into="R-killed").count() == 2
    assert AbstractionEdge.objects.filter(rollup_id="R-killed").count() == 2


READ_ONLY_COMMAND = """
import sys
import django
django.setup()
from django.db.backends.signals import connection_created

def read_only(sender, connection, **kwargs):
    if connection.vendor == "sqlite":
        connection.cursor().execute("PRAGMA query_only = 1")
    else:
        connection.cursor().execute("SET default_transaction_read_only = on")

connection_created.connect(read_only)
from django.core.management import execute_from_command_line
execute_from_command_line(["manage.py", *{args!r}])
"""


@pytest.mark.parametrize(
    "args",
    [["run_projections"], ["run_projections", "--loop", "--poll", "0.2"]],
    ids=["one-cycle", "loop"],
)
def test_read_only_database_is_a_clear_error_not_a_traceback(cast, args):
    write("alice", 0)  # something to fold, so the cycle must write
    done = run_child(READ_ONLY_COMMAND.format(args=args))
    assert done.returncode == 1, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr
    assert done.stderr.startswith("CommandError: the database is read-only"), done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert not MemorySession.objects.exists()
    assert run_cycle().rows_folded == 1  # a writable connection folds it normally
