"""What every bench repeats: a generated omnia world of a chosen shape, a store brought in the
way a user brings it (`manage.py import_omnia`, the store as the command leaves it), servers
on loopback, time to first byte, percentiles.

Imported by the bench scripts beside it as `_harness` (their own directory is on sys.path when
run as `python bench/bench_x.py`). Pure standard library at import time; Django is set up only
by the scripts that need it in-process.
"""

from __future__ import annotations

import http.client
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENV_BIN = Path(sys.executable).parent
PG = os.environ.get("OMNIA_BENCH_PG", "postgres://postgres@127.0.0.1:5432/test")

if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from memory.worlds.synthetic import Shape, generate_omnia_world  # noqa: E402  (no Django needed)

__all__ = ["Shape", "generate_omnia_world"]

# --- numbers ---------------------------------------------------------------------------------


def percentile(values: list[float], q: float) -> float:
    """The q-th percentile (0..100) of `values`, nearest rank."""
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    rank = max(0, min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1))))
    return ordered[rank]


def timed(fn, repeat: int = 1) -> tuple[float, object]:
    """(median seconds over `repeat` calls, the last call's result)."""
    samples, result = [], None
    for _ in range(repeat):
        started = time.perf_counter()
        result = fn()
        samples.append(time.perf_counter() - started)
    return statistics.median(samples), result


# --- a store, as a user makes one ---------------------------------------------------------------


def reset_pg_database(name: str) -> str:
    import psycopg

    with psycopg.connect(PG, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.execute(f'CREATE DATABASE "{name}"')
    return PG.rsplit("/", 1)[0] + "/" + name


def drop_pg_database(name: str) -> None:
    import psycopg

    with psycopg.connect(PG, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def store_env(database_url: str) -> dict[str, str]:
    """The environment of every process that touches the store: DEBUG off, a throwaway key."""
    return {
        **os.environ,
        "DATABASE_URL": database_url,
        "OMNIA_TESTING": "1",
        "OMNIA_DEBUG": "0",
        "DJANGO_SETTINGS_MODULE": "omnia_site.settings",
    }


def manage(env: dict[str, str], *args: str, check: bool = True) -> subprocess.CompletedProcess:
    """`manage.py <args>` in its own process, as a user types it."""
    done = subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True
    )
    if check and done.returncode != 0:
        raise SystemExit(f"manage.py {' '.join(args)} failed:\n{done.stdout}\n{done.stderr}")
    return done


def timed_manage(env: dict[str, str], *args: str) -> float:
    started = time.perf_counter()
    manage(env, *args)
    return time.perf_counter() - started


def timed_manage_cpu(env: dict[str, str], *args: str) -> tuple[float, float]:
    """`manage.py <args>`: (seconds on the clock, CPU seconds it and every helper process it
    reaped used): a rebuild's second process shows in the second figure, not the first."""
    proc = subprocess.Popen(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    started = time.perf_counter()
    _pid, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - started
    if os.waitstatus_to_exitcode(status):
        raise SystemExit(f"manage.py {' '.join(args)} failed:\n{proc.stderr.read().decode()}")
    proc.stderr.close()
    return elapsed, usage.ru_utime + usage.ru_stime


def timed_manage_peak(env: dict[str, str], *args: str) -> tuple[float, float, str]:
    """`manage.py <args>` in its own process: (seconds, its peak RSS in MB, its stdout). The
    child is reaped here with wait4, so the peak is its own, not the largest child's so far."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        started = time.perf_counter()
        proc = subprocess.Popen(
            [sys.executable, "manage.py", *args], cwd=ROOT, env=env, stdout=out, stderr=err
        )
        _pid, status, usage = os.wait4(proc.pid, 0)
        elapsed = time.perf_counter() - started
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        if proc.returncode:
            raise SystemExit(f"manage.py {' '.join(args)} failed:\n{out.read()}\n{err.read()}")
        return elapsed, usage.ru_maxrss / 1024, out.read()


# The floor a rebuild is measured against: every row of the save read in the fold's order in
# one statement, each intent JSON-parsed (`manage.py shell -c`, the save by name).
FLOOR = """
import json, time
from django.db import connection
from memory.models import Save
save = Save.objects.get(name={name!r})
started = time.perf_counter()
with connection.cursor() as c:
    c.execute("SELECT id, owner_id, timestamp, location_id, created_at, intent_json, outcome_json "
              "FROM buffer_entries WHERE game_save_id = %s ORDER BY owner_id, created_at, id",
              [save.pk])
    while rows := c.fetchmany(10000):
        for row in rows:
            json.loads(row[5])
print(time.perf_counter() - started)
"""


def session_cookie(env: dict[str, str]) -> str:
    """A logged-in admin's session cookie, made in the store (as a login would)."""
    code = (
        "from django.conf import settings\n"
        "from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY\n"
        "from django.contrib.auth.models import User\n"
        "from django.contrib.sessions.backends.db import SessionStore\n"
        "u = User.objects.create_user('bench', password='bench', is_staff=True, "
        "is_superuser=True)\n"
        "s = SessionStore()\n"
        "s[SESSION_KEY] = str(u.pk)\n"
        "s[BACKEND_SESSION_KEY] = 'memory.roles.RoleBackend'\n"
        "s[HASH_SESSION_KEY] = u.get_session_auth_hash()\n"
        "s.create()\n"
        "print(f'{settings.SESSION_COOKIE_NAME}={s.session_key}')\n"
    )
    return manage(env, "shell", "-c", code).stdout.strip().splitlines()[-1]


# --- servers and time to first byte --------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(port: int, proc: subprocess.Popen, what: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited with {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"{what} did not listen on {port} within {timeout} s")


@contextmanager
def servers(env: dict[str, str]) -> Iterator[dict[str, int]]:
    """Start named servers on loopback (`start(name, argv)`, `{port}` in argv; `settings`: a
    Django settings module other than the store's), stop them all on the way out. Yields the
    name → port map, with `start` under the key "start"."""
    procs: list[subprocess.Popen] = []
    ports: dict = {}

    def start(name: str, argv: list[str], settings: str | None = None) -> int:
        port = free_port()
        proc = subprocess.Popen(
            [a.replace("{port}", str(port)) for a in argv],
            cwd=ROOT,
            env=env if settings is None else {**env, "DJANGO_SETTINGS_MODULE": settings},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        procs.append(proc)
        wait_for(port, proc, name)
        ports[name] = port
        return port

    ports["start"] = start
    try:
        yield ports
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()


def gunicorn_argv() -> list[str]:
    """The inspector as production serves it: gunicorn, one sync worker, DEBUG off."""
    return [
        str(VENV_BIN / "gunicorn"),
        "-w",
        "1",
        "-b",
        "127.0.0.1:{port}",
        "--timeout",
        "300",
        "omnia_site.wsgi:application",
    ]


def datasette_argv(path: Path, fastest: bool = False) -> list[str]:
    argv = [str(VENV_BIN / "datasette"), "serve", str(path), "-h", "127.0.0.1", "-p", "{port}"]
    if fastest:
        argv += ["--setting", "suggest_facets", "off", "--setting", "default_facet_size", "0"]
    return argv


def ttfb(port: int, path: str, headers: dict[str, str], timeout: float = 300) -> tuple[float, int]:
    """Seconds from sending the request to the first byte of the answer, and its status."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    conn.connect()
    conn.putrequest("GET", path)
    for name, value in headers.items():
        conn.putheader(name, value)
    conn.endheaders()
    started = time.perf_counter()
    first = conn.sock.recv(1, socket.MSG_PEEK)
    elapsed = time.perf_counter() - started
    response = conn.getresponse()
    response.read()
    conn.close()
    if not first:
        raise RuntimeError(f"{path}: connection closed without an answer")
    return elapsed, response.status


def measure_together(targets: dict[str, tuple[int, str, dict[str, str]]], repeat: int) -> dict:
    """measure() of every target (name -> (port, path, headers)), their samples taken in
    turn: each warmed up once, then `repeat` rounds of one sample each. A slow spell of the
    machine (these VMs have them: a page 30-40 % slower for minutes, then not) falls on every
    target alike, so the ratios between them hold; measured one after another, each met a
    different machine. Each round takes them in a new order (seeded, so runs repeat it): in
    one fixed order the page after a heavy one (the 20,000 findings of the leaks' JSON) paid
    for its garbage every round, the aliases panel 13 ms where it takes 8."""
    status = {name: ttfb(port, path, headers)[1] for name, (port, path, headers) in targets.items()}
    samples: dict[str, list[float]] = {name: [] for name in targets}
    order, shuffled = list(targets), random.Random(0)
    for _round in range(repeat):
        shuffled.shuffle(order)
        for name in order:
            port, path, headers = targets[name]
            samples[name].append(ttfb(port, path, headers)[0])
    return {
        name: {
            "path": targets[name][1],
            "status": status[name],
            "median_ms": statistics.median(samples[name]) * 1000,
        }
        for name in targets
    }


def measure(port: int, path: str, headers: dict[str, str], repeat: int) -> dict:
    """One warm-up, then the median of `repeat` TTFB samples over fresh connections."""
    _warm, status = ttfb(port, path, headers)
    samples = [ttfb(port, path, headers)[0] for _ in range(repeat)]
    return {"path": path, "status": status, "median_ms": statistics.median(samples) * 1000}
