"""Viewer page time to first byte (PRODUCT.md §10, issue 6), as ratios measured in one run.

    .venv/bin/python bench/bench_viewer.py                 # 1,000,000 rows, the viewer holds 100,000
    .venv/bin/python bench/bench_viewer.py --smoke         # 10,000 rows / 1,000, < 30 s
    .venv/bin/python bench/bench_viewer.py --rows 1000000 --viewer-rows 100000 --repeat 7
    .venv/bin/python bench/bench_viewer.py --saves 3       # issue 16: 1 save vs 3 saves present

One temporary SQLite file is generated at run time (bulk executemany into the omnia tables,
after `migrate`, so every index the inspector relies on exists). Three servers are then
started on loopback over that same file:

  * the inspector under gunicorn (one sync worker, DEBUG off), logged in through a session
    cookie made here;
  * Datasette (`datasette serve FILE`), once with default settings and once with
    `--setting suggest_facets off --setting default_facet_size 0` for its fastest setting,
    where the page is also asked for `_nocount=1&_nofacet=1`.

For each URL: one warm-up request, then the median of --repeat time-to-first-byte samples
(request sent -> first response byte received, over a fresh connection). Ratios are the
inspector's viewer page and its buffer panel (the htmx fragment) over the Django admin
changelist of the same viewer's rows (`?owner__id__exact=`) and over the Datasette table page
filtered the same way (`?owner_id=`). Nothing is written to the repository.

Every row belongs to a save (issue 16): the store is generated as save `bench-1` and every
inspector page is read under `/saves/bench-1/`. With `--saves N` (N > 1), once every page has
been timed, the same world is generated again as saves `bench-2` … `bench-N` (same seed, same
ids, each folded and scanned as a loaded save is) and the viewer page and its buffer fragment
in `bench-1` are timed again on the same server: the ratio N saves / 1 save is the cost the
other playthroughs put on a reader of one.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENV_BIN = Path(sys.executable).parent
VIEWER = "npc-viewer"
WORLD = "bench-world"
BASE_US = 1_700_000_000_000_000
T0 = 1_783_339_200  # 2026-07-06T12:00:00Z


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def ttfb(port: int, path: str, headers: dict[str, str]) -> tuple[float, int]:
    """Seconds from sending the request to the first byte of the answer, and its status."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
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


def measure(port: int, path: str, headers: dict[str, str], repeat: int) -> dict:
    _warm, status = ttfb(port, path, headers)
    samples = [ttfb(port, path, headers)[0] for _ in range(repeat)]
    return {"path": path, "status": status, "median_ms": statistics.median(samples) * 1000}


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


# --- the store ------------------------------------------------------------------------------------


def build_store(rows: int, viewer_rows: int, owners: int, save_id: int, seed: int = 11) -> None:
    """World, entities, and `rows` buffer rows of which `viewer_rows` belong to the viewer,
    all in the save `save_id` (the same seed gives every save the same rows)."""
    from django.db import connection

    from memory.engine.shards import shard_of

    rng = random.Random(seed)
    others = [f"npc-{i:04d}" for i in range(owners)]
    with connection.cursor() as c:
        c.execute(
            "INSERT INTO objects (game_save_id, id, type, clock_iso) VALUES (%s, %s, 'world', %s)",
            (save_id, WORLD, "2026-07-06T12:00:00.000Z"),
        )
        c.execute(
            "INSERT INTO objects (game_save_id, id, type, world_id) "
            "VALUES (%s, 'room-0', 'location', %s)",
            (save_id, WORLD),
        )
        aliases = [[o, f"the sailor with {i} rings"] for i, o in enumerate(others[:50])]
        c.executemany(
            "INSERT INTO objects "
            "(game_save_id, id, type, world_id, location_id, aliases_json, is_agent) "
            "VALUES (%s, %s, 'entity', %s, 'room-0', %s, 1)",
            [(save_id, VIEWER, WORLD, json.dumps(aliases))]
            + [(save_id, o, WORLD, "[]") for o in others],
        )
        c.executemany(
            "INSERT INTO attributes (game_save_id, object_id, name, value, visibility) "
            "VALUES (%s, %s, 'name', %s, 'PUBLIC')",
            [(save_id, o, f"Sailor {o[4:]}") for o in [VIEWER, *others]],
        )
    shards = {o: shard_of(o) for o in [VIEWER, *others]}
    # The viewer's rows are spread evenly through the write order, as play would spread them.
    every = rows / viewer_rows
    sql = (
        "INSERT INTO buffer_entries (game_save_id, id, owner_id, timestamp, location_id, "
        "intent_json, outcome_json, created_at, shard, conversation_id) "
        "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)"
    )
    chunk: list[tuple] = []
    next_viewer = 0.0
    for n in range(rows):
        if n >= next_viewer:
            owner = VIEWER
            next_viewer += every
        else:
            owner = others[rng.randrange(owners)]
        actor = others[rng.randrange(60)]
        kind = "dialogue" if rng.random() < 0.4 else "action"
        intent = json.dumps(
            {
                "type": kind,
                "originalText": "Fair winds to you",
                "description": "Fair winds to you" if kind == "dialogue" else "coiled a rope",
                "actorId": actor,
                "targetIds": [owner],
            },
            separators=(",", ":"),
        )
        ts = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(T0 + n + 1))
        chunk.append(
            (
                save_id,
                f"m{n:09d}",
                owner,
                ts,
                "room-0",
                intent,
                None,
                BASE_US + n,
                shards[owner],
                None,
            )
        )
        if len(chunk) == 20000:
            with connection.cursor() as c:
                c.executemany(sql, chunk)
            chunk = []
    if chunk:
        with connection.cursor() as c:
            c.executemany(sql, chunk)
    with connection.cursor() as c:
        c.execute("ANALYZE")


def first_upkeep() -> dict:
    """What a user who just loaded the world pays once: the first projection cycle over every
    row plus the first leak scan of every viewer; then a fresh scan of every viewer vs reading
    the stored findings (what the overview and /leaks/ now do)."""
    from memory.engine.leaks import stored
    from memory.engine.leaks.world_scan import scan_world
    from memory.engine.upkeep import run_upkeep
    from memory.models import BufferEntry
    from memory.selectors import leaks

    started = time.perf_counter()
    cycle = run_upkeep()
    upkeep_s = time.perf_counter() - started
    started = time.perf_counter()
    scans = scan_world()
    fresh_s = time.perf_counter() - started
    started = time.perf_counter()
    report = leaks.leak_report()
    stored_s = time.perf_counter() - started
    assert not report.pending and len(report.findings) == len(scans)
    assert stored.refresh().viewers_scanned == 0
    # One alias edit: the editor's viewer alone is rescanned, in the edit's transaction.
    from memory import services
    from memory.engine.write_door import remember

    started = time.perf_counter()
    services.set_alias(VIEWER, "npc-0001", "the bosun", source="bench")
    alias_edit_s = time.perf_counter() - started
    # 1,000 new rows over 100 owners, then the next upkeep: only those owners are rescanned.
    from memory.models import WorldObject

    owners = list(
        WorldObject.objects.filter(type="entity")
        .exclude(id=VIEWER)
        .values_list("id", flat=True)[:100]
    )
    for n in range(1000):
        owner = owners[n % len(owners)]
        remember(
            owner,
            {
                "type": "action",
                "originalText": "coiled a rope",
                "description": "coiled a rope",
                "actorId": owner,
                "targetIds": [],
            },
            timestamp=time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(T0 + 2_000_000 + n)),
        )
    started = time.perf_counter()
    after_rows = run_upkeep()
    after_rows_s = time.perf_counter() - started
    return {
        "upkeep_s": round(upkeep_s, 2),
        "rows_folded": cycle.rows_folded,
        "sessions_written": cycle.sessions_written,
        "leak_viewers_scanned": cycle.leak_viewers_scanned,
        "fresh_scan_all_viewers_s": round(fresh_s, 2),
        "stored_findings_read_s": round(stored_s, 3),
        "alias_edit_with_its_rescan_s": round(alias_edit_s, 3),
        "upkeep_after_1000_rows_s": round(after_rows_s, 3),
        "upkeep_after_1000_rows_leak_viewers_scanned": after_rows.leak_viewers_scanned,
        "upkeep_after_1000_rows_rows_visited": after_rows.rows_visited,
        "viewer_entry": BufferEntry.objects.filter(owner_id=VIEWER)
        .values_list("id", flat=True)
        .first(),
    }


def new_save(n: int):
    """Save `bench-<n>`: the generated rows are one playthrough, under a name, as an import's are."""
    from memory.models import Save

    return Save.objects.create(name=f"bench-{n}", kind="scenario", era="v2")


def run_upkeep_of_loaded_save() -> None:
    """What a save added after the first pays before people read it: its first fold and leak
    scan (so the extra saves hold projections and findings too, as loaded saves do)."""
    from django.db import connection

    from memory.engine.upkeep import run_upkeep

    run_upkeep()
    with connection.cursor() as c:
        c.execute("ANALYZE")


def session_cookie() -> str:
    from django.conf import settings
    from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
    from django.contrib.auth.models import User
    from django.contrib.sessions.backends.db import SessionStore

    user = User.objects.create_user("bench", password="bench", is_staff=True, is_superuser=True)
    session = SessionStore()
    session[SESSION_KEY] = str(user.pk)
    session[BACKEND_SESSION_KEY] = "memory.roles.RoleBackend"
    session[HASH_SESSION_KEY] = user.get_session_auth_hash()
    session.create()
    return f"{settings.SESSION_COOKIE_NAME}={session.session_key}"


# --- the run ----------------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--viewer-rows", type=int, default=100_000)
    parser.add_argument("--owners", type=int, default=1999, help="entities besides the viewer")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--smoke", action="store_true", help="10,000 rows, 1,000 for the viewer")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument(
        "--saves",
        type=int,
        default=1,
        help="then add saves 2..N of the same world and time the viewer page and its buffer "
        "fragment again (issue 16)",
    )
    args = parser.parse_args()
    if args.smoke:
        args.rows, args.viewer_rows, args.owners = 10_000, 1_000, 99
        args.repeat = min(args.repeat, 3)

    workdir = Path(tempfile.mkdtemp(prefix="bench_viewer_"))
    db_file = workdir / "omnia.sqlite3"
    env = {
        **os.environ,
        "DATABASE_URL": f"sqlite:///{db_file}",
        "OMNIA_TESTING": "1",  # a throwaway secret key; DEBUG stays off
        "OMNIA_DEBUG": "0",
        "DJANGO_SETTINGS_MODULE": "omnia_site.settings",
    }
    os.environ.update({k: env[k] for k in ("DATABASE_URL", "OMNIA_TESTING", "OMNIA_DEBUG")})
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "omnia_site.settings")
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.core.management import call_command

    from memory.active_save import use

    procs: list[subprocess.Popen] = []
    try:
        started = time.perf_counter()
        call_command("migrate", verbosity=0)
        first_save = new_save(1)
        with use(first_save):
            build_store(args.rows, args.viewer_rows, args.owners, first_save.pk)
            built = time.perf_counter() - started
            upkeep = first_upkeep()
        cookie = session_cookie()
        from django.db import connection

        connection.close()

        servers: dict[str, int] = {}

        def serve(name: str, cmd: list[str], extra_env: dict | None = None) -> int:
            port = free_port()
            proc = subprocess.Popen(
                [c.replace("{port}", str(port)) for c in cmd],
                cwd=ROOT,
                env={**env, **(extra_env or {})},
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
            )
            procs.append(proc)
            wait_for(port, proc, name)
            servers[name] = port
            return port

        gunicorn = VENV_BIN / "gunicorn"
        serve(
            "django",
            [
                str(gunicorn),
                "-w",
                "1",
                "-b",
                "127.0.0.1:{port}",
                "--timeout",
                "300",
                "omnia_site.wsgi:application",
            ],
        )
        datasette = VENV_BIN / "datasette"
        have_datasette = datasette.exists()
        if have_datasette:
            base = [str(datasette), "serve", str(db_file), "-h", "127.0.0.1", "-p", "{port}"]
            serve("datasette", base)
            serve(
                "datasette_fast",
                [
                    *base,
                    "--setting",
                    "suggest_facets",
                    "off",
                    "--setting",
                    "default_facet_size",
                    "0",
                ],
            )

        auth = {"Cookie": cookie}
        fragment = {**auth, "HX-Request": "true"}
        plain: dict[str, str] = {}
        r = args.repeat
        page = f"/saves/{first_save.name}"  # every page of one save lives under its name
        api = f"/api/saves/{first_save.name}"
        figures = {
            "viewer_page": measure(servers["django"], f"{page}/viewers/{VIEWER}/", auth, r),
            "buffer_panel": measure(
                servers["django"], f"{page}/viewers/{VIEWER}/buffer/", fragment, r
            ),
            "buffer_panel_page": measure(
                servers["django"], f"{page}/viewers/{VIEWER}/buffer/", auth, r
            ),
            "admin_changelist": measure(
                servers["django"],
                f"/admin/memory/bufferentry/?owner_id__exact={VIEWER}"
                f"&game_save__id__exact={first_save.pk}",
                auth,
                r,
            ),
        }
        # Every other page a user opens, and the API twins.
        for name, path, headers in (
            ("overview", "/", auth),
            ("leaks_page", f"{page}/leaks/", auth),
            ("aliases_panel", f"{page}/viewers/{VIEWER}/aliases/", fragment),
            ("sessions_panel", f"{page}/viewers/{VIEWER}/sessions/", fragment),
            ("faces_panel", f"{page}/viewers/{VIEWER}/faces/", fragment),
            ("prompt_page", f"{page}/viewers/{VIEWER}/prompt/", auth),
            ("entry_page", f"{page}/viewers/{VIEWER}/entries/{upkeep['viewer_entry']}/", auth),
            ("api_buffer", f"{api}/viewers/{VIEWER}/buffer", auth),
            ("api_aliases", f"{api}/viewers/{VIEWER}/aliases", auth),
            ("api_sessions", f"{api}/viewers/{VIEWER}/sessions", auth),
            ("api_leaks", f"{api}/leaks", auth),
            ("api_prompt", f"{api}/viewers/{VIEWER}/prompt", auth),
        ):
            figures[name] = measure(servers["django"], path, headers, r)
        if have_datasette:
            figures["datasette_default"] = measure(
                servers["datasette"], f"/omnia/buffer_entries?owner_id={VIEWER}", plain, r
            )
            figures["datasette_fastest"] = measure(
                servers["datasette_fast"],
                f"/omnia/buffer_entries?owner_id={VIEWER}&_nocount=1&_nofacet=1",
                plain,
                r,
            )
        # Issue 16: the same world again as saves 2..N, then the reader of save 1 timed again.
        more_saves: dict = {}
        one_save_mb = round(db_file.stat().st_size / 2**20, 1)
        if args.saves > 1:
            from django.db import connection

            started = time.perf_counter()
            for n in range(2, args.saves + 1):
                other = new_save(n)
                with use(other):
                    build_store(args.rows, args.viewer_rows, args.owners, other.pk)
                    run_upkeep_of_loaded_save()
            connection.close()
            more_saves["saves"] = args.saves
            more_saves["added_in_s"] = round(time.perf_counter() - started, 1)
            for name, path, headers in (
                ("viewer_page", f"{page}/viewers/{VIEWER}/", auth),
                ("buffer_panel", f"{page}/viewers/{VIEWER}/buffer/", fragment),
            ):
                figures[f"{name}_{args.saves}_saves"] = measure(servers["django"], path, headers, r)
        bad = {k: v["status"] for k, v in figures.items() if v["status"] != 200}
        if bad:
            raise RuntimeError(f"non-200 answers: {bad}")

        def ratio(a: str, b: str) -> float | None:
            return figures[a]["median_ms"] / figures[b]["median_ms"] if b in figures else None

        ratios = {
            f"{a} / {b}": ratio(a, b)
            for a in ("viewer_page", "buffer_panel", "overview", "leaks_page")
            for b in ("admin_changelist", "datasette_default", "datasette_fastest")
            if b in figures
        }
        ratios["viewer_page / buffer_panel"] = ratio("viewer_page", "buffer_panel")
        if more_saves:
            for name in ("viewer_page", "buffer_panel"):
                ratios[f"{name}: {args.saves} saves / 1 save"] = ratio(
                    f"{name}_{args.saves}_saves", name
                )
        report = {
            "rows": args.rows,
            "viewer_rows": args.viewer_rows,
            "repeat": args.repeat,
            "store_built_s": round(built, 1),
            "entities": args.owners + 1,
            "first_upkeep": {k: v for k, v in upkeep.items() if k != "viewer_entry"},
            "db_file_mb": one_save_mb,
            "datasette": have_datasette,
            "ttfb_ms": {k: round(v["median_ms"], 2) for k, v in figures.items()},
            "ratios": {k: round(v, 3) for k, v in ratios.items()},
        }
        if more_saves:
            more_saves["db_file_mb"] = round(db_file.stat().st_size / 2**20, 1)
            report["more_saves"] = more_saves
        if args.json:
            print(json.dumps(report, indent=2))
        else:
            print(
                f"store: {args.rows:,} rows, viewer {VIEWER} holds {args.viewer_rows:,} "
                f"({report['db_file_mb']} MB, built in {report['store_built_s']} s); "
                f"median of {args.repeat} after one warm-up; {args.owners + 1:,} entities"
            )
            print(f"  first upkeep after the load: {json.dumps(report['first_upkeep'])}")
            for name, ms in report["ttfb_ms"].items():
                print(f"  TTFB {name:<20} {ms:10.2f} ms   {figures[name]['path']}")
            if more_saves:
                print(f"  with {args.saves} saves of the same world: {json.dumps(more_saves)}")
            for name, value in report["ratios"].items():
                print(f"  ratio {name:<40} {value:8.3f}")
            if not have_datasette:
                print("  datasette is not installed in this venv: admin ratio only")
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
