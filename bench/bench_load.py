"""Load test on PostgreSQL: gunicorn (4 workers), 2 projection workers, 32 readers, 100 writes/s.

    .venv/bin/python bench/bench_load.py                       # 10 s warm-up + 60 s measured
    .venv/bin/python bench/bench_load.py --think 0.05,0.2      # readers as fast as they can
    .venv/bin/python bench/bench_load.py --smoke               # 1 s + 2 s, 2 readers
    PG_ADMIN_URL=postgres://postgres@127.0.0.1:5432/postgres (default)

What it does, all on loopback and bounded in time:
1. drops and creates a dedicated database (--db, default omnia_load), migrates it, imports the
   tavern fixture world, creates a reader (password + API token) and an editor (API token);
2. starts gunicorn (omnia_site.wsgi, --workers 4, DEBUG off, manifest static) and two
   `run_projections --loop` workers;
3. runs locust headless: --readers users who read the viewer page, the buffer and sessions
   API and the entity list, pausing --think seconds between requests (a person reading), plus
   --writers users who POST remember through the API at --write-rate rows/s in total. Users
   ramp up over the first seconds; the first --warmup seconds are left out of the figures
   (cold gunicorn workers compile templates and open connections), their failures are not;
4. waits for the projection lag to reach zero, stops the workers with SIGTERM, and checks
   `rebuild_projections --verify` (no drift) and that every id the API answered 201 for is
   a row in buffer_entries, and that the sessions count every row exactly once.
Prints one JSON object with the figures; exits 1 if any check fails or any request errored.

This file is also the locustfile: locust imports it (locust is then in sys.modules) and
finds the user classes; run as a script it is the orchestrator.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PG = os.environ.get("PG_ADMIN_URL", "postgres://postgres@127.0.0.1:5432/postgres")
FIXTURE = ROOT / "tests" / "fixtures" / "omnia" / "omnia-head-tavern.sqlite"
# The save the fixture is imported as (issue 16): every page and API route is under it.
SAVE = "load"

# --- the locust side ------------------------------------------------------------------------------

if "locust" in sys.modules:
    from locust import FastHttpUser, between, constant_throughput, events, task

    VIEWERS = os.environ.get("BENCH_VIEWERS", "").split(",")
    IN_SAVE = f"/saves/{os.environ.get('BENCH_SAVE', SAVE)}"
    READER_TOKEN = os.environ.get("BENCH_READER_TOKEN", "")
    WRITER_TOKEN = os.environ.get("BENCH_WRITER_TOKEN", "")
    WRITERS = int(os.environ.get("BENCH_WRITERS", "20"))
    THINK = tuple(float(x) for x in os.environ.get("BENCH_THINK", "1,3").split(","))
    WRITE_RATE = float(os.environ.get("BENCH_WRITE_RATE", "100"))
    IDS_PATH = os.environ.get("BENCH_IDS_PATH", "")
    SAMPLES_PATH = os.environ.get("BENCH_SAMPLES_PATH", "")
    SESSIONS = os.environ.get("BENCH_SESSIONS", "").split(",")
    written: list[str] = []
    samples: list[tuple[str, float, bool, float]] = []
    started = [time.monotonic()]

    @events.test_start.add_listener
    def mark_start(**_kwargs) -> None:
        started[0] = time.monotonic()

    @events.request.add_listener
    def record(name: str, response_time: float, exception: object, **_kwargs) -> None:
        # Every request's own time (exact percentiles, not locust's rounded buckets) and when
        # it ended, so the orchestrator can leave the warm-up out.
        samples.append((name, response_time, exception is None, time.monotonic() - started[0]))

    # FastHttpUser (geventhttpclient) rather than HttpUser (requests): the load generator
    # shares the two cores with the server and PostgreSQL, so its own CPU per request is
    # capacity taken from what is measured.

    class Reader(FastHttpUser):
        """A QA reader: signs in once, then browses the viewer page and its JSON twins,
        pausing BENCH_THINK seconds (uniform, "lo,hi") between requests."""

        weight = 1
        wait_time = between(*THINK)

        def on_start(self) -> None:
            # A session made in setup: signing in 32 users at once would spend the first
            # seconds of the run hashing passwords (PBKDF2), which is not what is measured.
            self.page = {"Cookie": f"sessionid={random.choice(SESSIONS)}"}
            self.api = {"Authorization": f"Bearer {READER_TOKEN}"}

        @task(3)
        def viewer_page(self) -> None:
            self.client.get(
                f"{IN_SAVE}/viewers/{random.choice(VIEWERS)}/",
                headers=self.page,
                name="/saves/[save]/viewers/[id]/",
            )

        @task(3)
        def buffer_api(self) -> None:
            self.client.get(
                f"/api{IN_SAVE}/viewers/{random.choice(VIEWERS)}/buffer",
                headers=self.api,
                name="/api/saves/[save]/viewers/[id]/buffer",
            )

        @task(2)
        def sessions_api(self) -> None:
            self.client.get(
                f"/api{IN_SAVE}/viewers/{random.choice(VIEWERS)}/sessions",
                headers=self.api,
                name="/api/saves/[save]/viewers/[id]/sessions",
            )

        @task(1)
        def entities_api(self) -> None:
            self.client.get(
                f"/api{IN_SAVE}/entities", headers=self.api, name="/api/saves/[save]/entities"
            )

    class Writer(FastHttpUser):
        """The game's CI: remembers rows through the API at a fixed total rate, spread over
        BENCH_WRITERS users so that one slow answer does not stall the rate (each user has
        one request in flight and needs its answer within WRITERS / rate seconds)."""

        fixed_count = WRITERS
        wait_time = constant_throughput(WRITE_RATE / max(1, WRITERS))

        @task
        def remember(self) -> None:
            owner = random.choice(VIEWERS)
            intent = {
                "type": random.choice(("dialogue", "action")),
                "originalText": "load",
                "description": "something happens under load",
                "actorId": owner,
                "targetIds": [],
            }
            with self.client.post(
                f"/api{IN_SAVE}/viewers/{owner}/memories",
                json={"intent": intent, "conversation_id": f"load-{random.randrange(20)}"},
                headers={"Authorization": f"Bearer {WRITER_TOKEN}"},
                name="POST /api/saves/[save]/viewers/[id]/memories",
                catch_response=True,
            ) as response:
                if response.status_code == 201:
                    written.append(response.json()["id"])
                    response.success()
                else:
                    response.failure(f"{response.status_code}: {response.text[:200]}")

    @events.test_stop.add_listener
    def dump_written(**_kwargs) -> None:
        if IDS_PATH:
            Path(IDS_PATH).write_text("\n".join(written))
        if SAMPLES_PATH:
            Path(SAMPLES_PATH).write_text(json.dumps(samples))


# --- the orchestrator -------------------------------------------------------------------------------

# The shell snippets run inside the save the benchmark imported, named as a command's
# --save names it.
SETUP = """
import json
from memory.active_save import activate
from memory.engine.saves import get_save
activate(get_save("load"))
from django.contrib.auth.models import Group, User
from memory.tokens import issue_token
from memory.models import BufferEntry, ObjectType, WorldObject
reader = User.objects.create_user("reader", password="reader-pw")
reader.groups.add(Group.objects.get(name="readers"))
editor = User.objects.create_user("writer", password="writer-pw")
editor.groups.add(Group.objects.get(name="editors"))
from django.conf import settings
from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
from importlib import import_module
store = import_module(settings.SESSION_ENGINE).SessionStore
sessions = []
for _ in range(64):
    s = store()
    s[SESSION_KEY] = str(reader.pk)
    s[BACKEND_SESSION_KEY] = "memory.roles.RoleBackend"
    s[HASH_SESSION_KEY] = reader.get_session_auth_hash()
    s.create()
    sessions.append(s.session_key)
viewers = list(WorldObject.objects.filter(type=ObjectType.ENTITY).order_by("id").values_list("id", flat=True))
print(json.dumps({
    "reader_token": issue_token(reader, "load")[1],
    "writer_token": issue_token(editor, "load")[1],
    "viewers": viewers,
    "sessions": sessions,
    "rows_before": BufferEntry.objects.count(),
}))
"""

CHECK = """
import json, sys
from memory.active_save import activate
from memory.engine.saves import get_save
activate(get_save("load"))
from memory.models import BufferEntry, MemorySession
from memory.engine.projections.worker import projection_status
ids = [line for line in open(sys.argv[1]).read().split() if line]
present = set()
for start in range(0, len(ids), 1000):
    present |= set(BufferEntry.objects.filter(id__in=ids[start:start + 1000]).values_list("id", flat=True))
total = BufferEntry.objects.count()
counted = sum(MemorySession.objects.values_list("memory_count", flat=True))
print(json.dumps({"written": len(ids), "present": len(present), "rows_total": total,
                  "rows_counted_by_sessions": counted, "lag_rows": projection_status()["lag_rows"]}))
"""


def reset_database(name: str) -> str:
    import psycopg

    with psycopg.connect(PG, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.execute(f'CREATE DATABASE "{name}"')
    return PG.rsplit("/", 1)[0] + "/" + name


def manage(env: dict[str, str], *args: str, check: bool = True) -> subprocess.CompletedProcess:
    done = subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True
    )
    if check and done.returncode != 0:
        raise SystemExit(f"manage.py {' '.join(args)} failed:\n{done.stdout}\n{done.stderr}")
    return done


def wait_http(url: str, seconds: float = 30) -> None:
    import urllib.request

    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(0.3)
    raise SystemExit(f"{url} did not come up")


def wait_lag_zero(env: dict[str, str], seconds: float = 120) -> float:
    started = time.monotonic()
    while time.monotonic() - started < seconds:
        out = manage(
            env,
            "shell",
            "-c",
            "from memory.engine.projections.worker import lag_every_save; print(lag_every_save())",
        )
        if out.stdout.strip().splitlines()[-1] == "0":
            return time.monotonic() - started
        time.sleep(0.5)
    raise SystemExit("projection lag did not reach zero")


def percentile(ordered: list[float], q: float) -> float:
    if not ordered:
        return 0.0
    return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 1)


def figures(name: str, samples: list, seconds: float) -> dict:
    times = sorted(t for _n, t, _ok, _at in samples)
    return {
        "name": name,
        "requests": len(samples),
        "failures": sum(1 for _n, _t, ok, _at in samples if not ok),
        "requests_per_s": round(len(samples) / seconds, 1),
        "p50_ms": percentile(times, 0.50),
        "p95_ms": percentile(times, 0.95),
        "p99_ms": percentile(times, 0.99),
    }


def aggregate(samples_path: Path, warmup: float, seconds: float) -> tuple[dict, list[dict], int]:
    """Figures over the measured window only; warm-up failures still count as failures."""
    everything = json.loads(samples_path.read_text())
    warm_failures = sum(1 for _n, _t, ok, at in everything if at < warmup and not ok)
    samples = [x for x in everything if x[3] >= warmup]
    names = sorted({x[0] for x in samples})
    per_route = [figures(n, [x for x in samples if x[0] == n], seconds) for n in names]
    return figures("all", samples, seconds), per_route, warm_failures


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seconds", type=int, default=60, help="measured window")
    parser.add_argument(
        "--warmup",
        type=int,
        default=10,
        help="seconds run before the measured window (users ramp up, gunicorn workers open "
        "their connections and compile templates); not in the percentiles",
    )
    parser.add_argument("--readers", type=int, default=32)
    parser.add_argument("--write-rate", type=float, default=100.0, help="rows/s, all writers")
    parser.add_argument("--writers", type=int, default=20, help="writer users sharing the rate")
    parser.add_argument(
        "--think",
        default="1,3",
        help="reader pause between requests, 'lo,hi' seconds (uniform); '0.05,0.2' is a "
        "saturation run, not a person",
    )
    parser.add_argument("--settle", default="0.2", help="run_projections --settle (seconds)")
    parser.add_argument("--web-workers", type=int, default=4)
    parser.add_argument("--projection-workers", type=int, default=2)
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--db", default="omnia_load")
    parser.add_argument(
        "--smoke", action="store_true", help="2 s, 2 readers, 2 web workers, 1 projection worker"
    )
    args = parser.parse_args()
    if args.smoke:
        args.seconds, args.readers, args.warmup, args.web_workers, args.projection_workers = (
            2,
            2,
            1,
            2,
            1,
        )

    url = reset_database(args.db)
    work = Path(tempfile.mkdtemp(prefix="omnia-load-"))
    env = dict(os.environ)
    env.update(
        {
            "DATABASE_URL": url,
            "OMNIA_DEBUG": "0",
            "OMNIA_SECRET_KEY": "bench-only-" + os.urandom(8).hex(),
            "OMNIA_ALLOWED_HOSTS": "127.0.0.1,localhost",
            "OMNIA_DB_CONN_MAX_AGE": "60",
            # Its own static files: CI runs this beside the suites, whose servers read the
            # checkout's var/staticfiles while collectstatic would be rewriting it.
            "OMNIA_STATIC_ROOT": str(work / "static"),
            "PYTHONUNBUFFERED": "1",
        }
    )
    env.pop("OMNIA_TESTING", None)
    manage(env, "migrate", "--no-input", "-v0")
    manage(env, "collectstatic", "--no-input", "-v0")
    manage(env, "import_omnia", str(FIXTURE), "--as", SAVE)
    setup = json.loads(manage(env, "shell", "-c", SETUP).stdout.strip().splitlines()[-1])
    manage(env, "run_projections")  # fold the imported rows: the lag starts at zero

    base = f"http://127.0.0.1:{args.port}"
    procs: list[subprocess.Popen] = []
    logs = {name: (work / f"{name}.log").open("w") for name in ("gunicorn", "workers", "locust")}
    try:
        procs.append(
            subprocess.Popen(
                [
                    str(Path(sys.executable).parent / "gunicorn"),
                    "omnia_site.wsgi",
                    "--workers",
                    str(args.web_workers),
                    "--bind",
                    f"127.0.0.1:{args.port}",
                    "--access-logfile",
                    "-",
                ],
                cwd=ROOT,
                env=env,
                stdout=logs["gunicorn"],
                stderr=subprocess.STDOUT,
            )
        )
        workers = [
            subprocess.Popen(
                [
                    sys.executable,
                    "manage.py",
                    "run_projections",
                    "--loop",
                    "--poll",
                    "1",
                    "--settle",
                    args.settle,
                    "--json",
                ],
                cwd=ROOT,
                env=env,
                stdout=subprocess.PIPE,
                stderr=logs["workers"],
                text=True,
            )
            for _ in range(args.projection_workers)
        ]
        procs.extend(workers)
        wait_http(f"{base}/accounts/login/")

        ids_path = work / "written.txt"
        locust_env = dict(env)
        locust_env.update(
            {
                "BENCH_VIEWERS": ",".join(setup["viewers"]),
                "BENCH_SAVE": SAVE,
                "BENCH_READER_TOKEN": setup["reader_token"],
                "BENCH_WRITER_TOKEN": setup["writer_token"],
                "BENCH_WRITERS": str(args.writers),
                "BENCH_THINK": args.think,
                "BENCH_WRITE_RATE": str(args.write_rate),
                "BENCH_IDS_PATH": str(ids_path),
                "BENCH_SAMPLES_PATH": str(work / "samples.json"),
                "BENCH_SESSIONS": ",".join(setup["sessions"]),
            }
        )
        users = args.readers + args.writers
        locust = subprocess.run(
            [
                str(Path(sys.executable).parent / "locust"),
                "-f",
                str(Path(__file__).resolve()),
                "--headless",
                "--host",
                base,
                "--users",
                str(users),
                "--spawn-rate",
                str(max(1, users // 5)),
                "--run-time",
                f"{args.warmup + args.seconds}s",
                "--stop-timeout",
                "10",
                "--csv",
                str(work / "load"),
                "--only-summary",
                "--loglevel",
                "WARNING",
            ],
            cwd=ROOT,
            env=locust_env,
            stdout=logs["locust"],
            stderr=subprocess.STDOUT,
        )
        total, per_route, warm_failures = aggregate(
            work / "samples.json", args.warmup, args.seconds
        )
        catch_up = wait_lag_zero(env)
        folded = []
        for w in workers:
            w.send_signal(signal.SIGTERM)
            out, _ = w.communicate(timeout=60)
            folded.append(
                json.loads(out.strip().splitlines()[-1])
                if w.returncode == 0
                else {"exit": w.returncode}
            )
        verify = manage(env, "rebuild_projections", "--verify", "--json", check=False)
        check = json.loads(
            manage(env, "shell", "-c", f"import sys; sys.argv=['x', {str(ids_path)!r}]\n" + CHECK)
            .stdout.strip()
            .splitlines()[-1]
        )
    finally:
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in procs:
            try:
                p.wait(20)
            except subprocess.TimeoutExpired:
                p.kill()
        for f in logs.values():
            f.close()

    drift = (
        json.loads(verify.stdout.strip().splitlines()[-1])["drift"]
        if verify.stdout.strip()
        else ["no output"]
    )
    server_errors = sum(
        1 for line in (work / "gunicorn.log").read_text().splitlines() if '" 5' in line
    )
    result = {
        "seconds": args.seconds,
        "readers": args.readers,
        "reader_think_s": args.think,
        "writers": args.writers,
        "write_rate_target": args.write_rate,
        "web_workers": args.web_workers,
        "projection_workers": args.projection_workers,
        "warmup_s": args.warmup,
        "warmup_failures": warm_failures,
        "total": total,
        "routes": per_route,
        "server_5xx_in_access_log": server_errors,
        "projection_catch_up_after_load_s": round(catch_up, 1),
        "projection_workers_summary": folded,
        "verify_exit": verify.returncode,
        "verify_drift": len(drift),
        "rows": check,
        "write_rate_achieved": next(
            (
                round((r["requests"] - r["failures"]) / args.seconds, 1)
                for r in per_route
                if r["name"].startswith("POST")
            ),
            0.0,
        ),
        "locust_exit": locust.returncode,
        "logs": str(work),
    }
    print(json.dumps(result, indent=2))
    ok = (
        total["failures"] == 0
        and warm_failures == 0
        and server_errors == 0
        and verify.returncode == 0
        and not drift
        and check["written"] == check["present"]
        and check["rows_counted_by_sessions"] == check["rows_total"]
    )
    raise SystemExit(0 if ok else 1)


if __name__ == "__main__":
    main()
