"""Every page a user opens, timed on the user's path (PRODUCT.md §10, issue 25), as ratios
measured in one run.

    .venv/bin/python bench/bench_viewer.py                         # 1M rows, 2,000 entities, SQLite
    .venv/bin/python bench/bench_viewer.py --shape readable-v1     # another world shape
    .venv/bin/python bench/bench_viewer.py --database postgres     # the same on PostgreSQL
    .venv/bin/python bench/bench_viewer.py --saves 3               # then 2 more saves of it
    .venv/bin/python bench/bench_viewer.py --smoke                 # 3,000 rows (CI)

The path, each step a `manage.py` command in its own process, exactly as README tells a user:
an omnia save is generated (`memory/worlds/synthetic.py`: uuid or readable ids, one viewer
with 100,000 rows, 2,000 entities, up to 5 witnesses a moment, a fifth of the moments naming
someone by a true name: about 20,000 stored leak findings, as a save whose LLM lines leak has) → `migrate` → `import_omnia
FILE` → `run_projections` (the first cycle) → `rebuild_projections` (timed against an ordered
read + JSON parse of the same rows, the floor), then once more with the save's sessions and
episodes deleted first (a rebuild that writes every row, as the first cycle does; a rebuild
of a healthy store writes none). Nothing is ANALYZEd or tuned by hand: the store is as those
commands leave it.

Then gunicorn (one sync worker, DEBUG off) serves the store and Datasette serves the omnia
file itself, default settings and fastest (`suggest_facets off`, `default_facet_size 0`,
`_nocount=1&_nofacet=1`). Each URL: one warm-up, then the median of --repeat
time-to-first-byte samples over fresh connections, taken in rounds of one sample of every URL
(Datasette's and the stock admin's among them), so that a slow spell of the machine weighs on
every page and its baseline alike. The generated file and the store live in
a temporary directory (or a temporary PostgreSQL database), removed at the end.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import quote, urlencode

from _harness import (
    FLOOR,
    Shape,
    datasette_argv,
    drop_pg_database,
    generate_omnia_world,
    gunicorn_argv,
    manage,
    measure,
    measure_together,
    reset_pg_database,
    servers,
    session_cookie,
    store_env,
    timed_manage,
    timed_manage_cpu,
)

STATISTICS = """
from memory.engine.planner import LEAK_TABLES, PROJECTION_TABLES, WORLD_TABLES, refresh_statistics
print(refresh_statistics(WORLD_TABLES + PROJECTION_TABLES + LEAK_TABLES))
"""

# Every session and episode of the save gone: the next rebuild writes every row it folds, as
# the first cycle after an import does (a rebuild of a healthy store writes none of them).
EMPTIED = """
from memory.active_save import use
from memory.models import Episode, MemorySession, Save
with use(Save.objects.get(name={name!r})):
    MemorySession.objects.all().delete()
    Episode.objects.all().delete()
"""

FIRST_ENTRY = """
from memory.models import BufferEntry, Save
save = Save.objects.get(name={name!r})
print(BufferEntry.objects.in_save(save).filter(owner_id={viewer!r}).order_by("timestamp")
      .values_list("id", flat=True).first())
"""

# The moment halfway through the viewer's rows: where a person asks the prompt as it stood.
MIDDLE_MOMENT = """
from memory.models import BufferEntry, Save
save = Save.objects.get(name={name!r})
rows = BufferEntry.objects.in_save(save).filter(owner_id={viewer!r}).order_by("timestamp")
print(rows.values_list("timestamp", flat=True)[rows.count() // 2])
"""


def pages(save: str, info: dict, entry: str, moment: str) -> dict[str, tuple[str, bool]]:
    """Every page a user opens: name → (path, as an htmx fragment). `moment`: a world time
    the prompt is asked at."""
    v, person, word = quote(info["viewer"]), quote(info["person"]), info["word"]
    p, a = f"/saves/{save}", f"/api/saves/{save}"
    return {
        "viewer_page": (f"{p}/viewers/{v}/", False),
        "buffer_fragment": (f"{p}/viewers/{v}/buffer/", True),
        "api_buffer": (f"{a}/viewers/{v}/buffer", False),
        "buffer_q": (f"{p}/viewers/{v}/buffer/?q={word}", True),
        "buffer_uses": (f"{p}/viewers/{v}/buffer/?uses={person}", True),
        "api_buffer_q": (f"{a}/viewers/{v}/buffer?q={word}", False),
        "api_buffer_uses": (f"{a}/viewers/{v}/buffer?uses={person}", False),
        "overview": ("/", False),
        "save_page": (f"{p}/", False),
        "leak_report": (f"{p}/leaks/", False),
        "api_leaks": (f"{a}/leaks", False),
        "aliases_panel": (f"{p}/viewers/{v}/aliases/", True),
        "sessions_panel": (f"{p}/viewers/{v}/sessions/", True),
        "faces_panel": (f"{p}/viewers/{v}/faces/", True),
        "prompt_page": (f"{p}/viewers/{v}/prompt/", False),
        "prompt_at": (f"{p}/viewers/{v}/prompt/?{urlencode({'at': moment})}", False),
        "entry_page": (f"{p}/viewers/{v}/entries/{quote(entry)}/", False),
        "api_aliases": (f"{a}/viewers/{v}/aliases", False),
        "api_sessions": (f"{a}/viewers/{v}/sessions", False),
        "api_prompt": (f"{a}/viewers/{v}/prompt", False),
        "api_entities": (f"{a}/entities", False),
        "triage": ("/triage/", False),
        "api_triage": ("/api/triage", False),
        # The admin's list of every buffer row (the admin index links it) and one viewer's.
        "admin_buffer_list": ("/admin/memory/bufferentry/", False),
        "admin_buffer_of_viewer": (f"/admin/memory/bufferentry/?owner_id__exact={v}", False),
    }


# Targets of PRODUCT.md §10 on the user's path, as a fraction of Datasette's default page.
TARGETS = {
    "viewer_page": 0.05,
    "buffer_fragment": 0.02,
    "api_buffer": 0.02,
    "buffer_q": 0.25,
    "buffer_uses": 0.25,
    "api_buffer_q": 0.25,
    "api_buffer_uses": 0.25,
    "overview": 0.03,
    "save_page": 0.03,
    "leak_report": 0.03,
    "triage": 0.03,
}
# PRODUCT §10 (2,000 entities): the viewer page at most this many times its buffer fragment.
PAGE_VS_FRAGMENT = 3.0
# PRODUCT §10 (1M rows, the viewer with 100k): the buffer fragment at most this many times
# Datasette's fastest page of the same rows, and the viewer page at most this many times the
# admin's list of that viewer's rows (the admin as this project ships it: its list was made
# fast in the seventh session, so this is no longer a comparison with Django's defaults).
FRAGMENT_VS_DATASETTE_FASTEST = 2.0
PAGE_VS_ADMIN = 0.5
# Both admins are timed: this project's (/admin/, tuned) and Django's as it ships
# (bench/stock_admin_urls.py), each against that target.
STOCK_ADMIN = "bench.stock_admin_settings"
# PRODUCT §10 on the user's path: the rebuild (leak findings included) at most this many times
# the ordered read + parse of the same rows; the first cycle after the import at most this many
# times a rebuild doing the same work (one that writes every row it folds).
REBUILD_VS_FLOOR = 2.0
FIRST_CYCLE_VS_REBUILD = 1.2

FINDINGS = """
from memory.models import LeakFinding, Save
print(LeakFinding.every_save.filter(game_save__name={name!r}).count())
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--entities", type=int, default=2_000)
    parser.add_argument("--hot-rows", type=int, default=100_000, help="the busy viewer's rows")
    parser.add_argument(
        "--shape",
        default=None,
        help="uuid-head (default) or readable-v1 (the smoke's default, so CI walks the other)",
    )
    parser.add_argument("--database", choices=("sqlite", "postgres"), default="sqlite")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--saves", type=int, default=1, help="then import N-1 more copies")
    parser.add_argument(
        "--leaks",
        type=float,
        default=0.2,
        help="the share of moments that name someone by a true name (each a leak in every "
        "other witness's prompt): 0.2 stores about 20,000 findings at 1M rows",
    )
    parser.add_argument("--smoke", action="store_true", help="3,000 rows: proves it runs")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()
    if args.smoke:
        args.rows, args.entities, args.hot_rows, args.repeat = 3_000, 60, 300, 1
    args.shape = args.shape or ("readable-v1" if args.smoke else "uuid-head")
    shape = Shape.named(
        args.shape, rows=args.rows, entities=args.entities, hot_rows=args.hot_rows, leaks=args.leaks
    )
    workdir = Path(tempfile.mkdtemp(prefix="bench_viewer_"))
    world_file = workdir / "harbour.sqlite"
    pg_name = f"bench_viewer_{int(time.time())}"
    if args.database == "postgres":
        url = reset_pg_database(pg_name)
    else:
        url = f"sqlite:///{workdir / 'store.sqlite3'}"
    env = store_env(url)
    steps: dict[str, float] = {}
    try:
        started = time.perf_counter()
        info = generate_omnia_world(world_file, shape)
        steps["generate_s"] = time.perf_counter() - started
        manage(env, "migrate", "-v0")
        steps["import_s"] = timed_manage(env, "import_omnia", str(world_file))
        steps["first_cycle_s"], steps["first_cycle_cpu_s"] = timed_manage_cpu(
            env, "run_projections"
        )
        steps["rebuild_s"], steps["rebuild_cpu_s"] = timed_manage_cpu(env, "rebuild_projections")
        manage(env, "shell", "-c", EMPTIED.format(name="harbour"))
        steps["rebuild_writing_all_s"], _ = timed_manage_cpu(env, "rebuild_projections")
        # What the bulk doors add to leave the planner current (each already ran it once).
        stats = manage(env, "shell", "-c", STATISTICS)
        steps["statistics_s"] = float(stats.stdout.strip().splitlines()[-1])
        floor = manage(env, "shell", "-c", FLOOR.format(name="harbour"))
        steps["read_parse_floor_s"] = float(floor.stdout.strip().splitlines()[-1])
        entry = (
            manage(env, "shell", "-c", FIRST_ENTRY.format(name="harbour", viewer=info["viewer"]))
            .stdout.strip()
            .splitlines()[-1]
        )
        moment = (
            manage(env, "shell", "-c", MIDDLE_MOMENT.format(name="harbour", viewer=info["viewer"]))
            .stdout.strip()
            .splitlines()[-1]
        )
        findings = int(
            manage(env, "shell", "-c", FINDINGS.format(name="harbour")).stdout.strip().split()[-1]
        )
        cookie = session_cookie(env)
        auth = {"Cookie": cookie}
        fragment = {**auth, "HX-Request": "true"}
        with servers(env) as run:
            django = run["start"]("django", gunicorn_argv())
            ds = run["start"]("datasette", datasette_argv(world_file))
            fast = run["start"]("datasette_fast", datasette_argv(world_file, fastest=True))
            # Django's admin changelist as Django ships it, of the viewer's rows (PRODUCT §10's
            # baseline beside the viewer page), from a server that knows its URL.
            stock = run["start"]("stock_admin", gunicorn_argv(), settings=STOCK_ADMIN)
            targets = {
                name: (django, path, fragment if is_fragment else auth)
                for name, (path, is_fragment) in pages("harbour", info, entry, moment).items()
            }
            plain: dict[str, str] = {}
            table = f"/harbour/buffer_entries?owner_id={quote(info['viewer'])}"
            targets["datasette_default"] = (ds, table, plain)
            targets["datasette_fastest"] = (fast, f"{table}&_nocount=1&_nofacet=1", plain)
            targets["stock_admin_buffer_of_viewer"] = (
                stock,
                f"/stock-admin/memory/bufferentry/?owner_id__exact={quote(info['viewer'])}",
                auth,
            )
            # Every page and its baselines sampled in turn: the ratios compare one machine.
            figures: dict[str, dict] = measure_together(targets, args.repeat)
            more: dict[str, float] = {}
            if args.saves > 1:
                for n in range(2, args.saves + 1):
                    manage(env, "import_omnia", str(world_file), "--as", f"harbour-{n}")
                    manage(env, "run_projections")
                for name in ("viewer_page", "buffer_fragment"):
                    path, is_fragment = pages("harbour", info, entry, moment)[name]
                    headers = fragment if is_fragment else auth
                    figures[f"{name}_{args.saves}_saves"] = measure(
                        django, path, headers, args.repeat
                    )
                    more[f"{name}: {args.saves} saves / 1"] = (
                        figures[f"{name}_{args.saves}_saves"]["median_ms"]
                        / figures[name]["median_ms"]
                    )
        # Datasette answers 400 when its default page runs past its own 1 s SQL time limit (a
        # loaded machine): said in the report, not a reason to throw the run away.
        bad = {k: v["status"] for k, v in figures.items() if v["status"] != 200}
        if any(not k.startswith("datasette") for k in bad):
            raise SystemExit(f"non-200 answers: {bad}")
        default = figures["datasette_default"]["median_ms"]
        ratios = {
            name: figures[name]["median_ms"] / default
            for name in figures
            if not name.startswith("datasette")
        }
        page_vs_fragment = (
            figures["viewer_page"]["median_ms"] / figures["buffer_fragment"]["median_ms"]
        )
        against = {
            "buffer_fragment_vs_datasette_fastest": (
                figures["buffer_fragment"]["median_ms"] / figures["datasette_fastest"]["median_ms"],
                FRAGMENT_VS_DATASETTE_FASTEST,
            ),
            "viewer_page_vs_admin": (
                figures["viewer_page"]["median_ms"]
                / figures["admin_buffer_of_viewer"]["median_ms"],
                PAGE_VS_ADMIN,
            ),
            "viewer_page_vs_stock_admin": (
                figures["viewer_page"]["median_ms"]
                / figures["stock_admin_buffer_of_viewer"]["median_ms"],
                PAGE_VS_ADMIN,
            ),
        }
        report = {
            "database": args.database,
            "world": {
                **{k: v for k, v in info.items() if k not in ("viewer", "person")},
                "leak_findings": findings,
            },
            "steps_s": {k: round(v, 2) for k, v in steps.items()},
            "rebuild_vs_floor": round(steps["rebuild_s"] / steps["read_parse_floor_s"], 2),
            # The CPU both rebuild processes used, against the floor's one process: what the
            # second core does is not hidden by the clock figure.
            "rebuild_cpu_vs_floor": round(steps["rebuild_cpu_s"] / steps["read_parse_floor_s"], 2),
            "first_cycle_vs_rebuild": round(steps["first_cycle_s"] / steps["rebuild_s"], 2),
            # The same work on both sides: a rebuild that writes every row it folds.
            "first_cycle_vs_rebuild_writing_all": round(
                steps["first_cycle_s"] / steps["rebuild_writing_all_s"], 2
            ),
            "ttfb_ms": {k: round(v["median_ms"], 2) for k, v in figures.items()},
            "vs_datasette_default": {k: round(v, 4) for k, v in ratios.items()},
            "viewer_page_vs_fragment": round(page_vs_fragment, 2),
            **{name: round(ratio, 3) for name, (ratio, _target) in against.items()},
            "more_saves": {k: round(v, 3) for k, v in more.items()},
            "datasette_not_200": bad,
            "targets_missed": {
                **{k: round(ratios[k], 4) for k, t in TARGETS.items() if ratios[k] > t},
                **(
                    {"viewer_page_vs_fragment": round(page_vs_fragment, 2)}
                    if page_vs_fragment > PAGE_VS_FRAGMENT
                    else {}
                ),
                **{
                    name: round(ratio, 3)
                    for name, (ratio, target) in against.items()
                    if ratio > target
                },
            },
        }
        steps_against = {
            "rebuild_vs_floor": REBUILD_VS_FLOOR,
            "first_cycle_vs_rebuild_writing_all": FIRST_CYCLE_VS_REBUILD,
        }
        for name, target in steps_against.items():
            if report[name] > target:
                report["targets_missed"][name] = report[name]
        if args.json:
            print(json.dumps(report, indent=2))
            return
        print(
            f"{args.database}: {info['rows']:,} rows, {info['entities']:,} entities, viewer "
            f"holds {info['viewer_rows']:,} ({args.shape}), {findings:,} leak findings; "
            f"median of {args.repeat}"
        )
        print(f"  steps: {json.dumps(report['steps_s'])}")
        print(
            f"  rebuild / read+parse floor {report['rebuild_vs_floor']}x (CPU of its "
            f"processes {report['rebuild_cpu_vs_floor']}x); "
            f"first cycle / rebuild {report['first_cycle_vs_rebuild']}x, / a rebuild writing "
            f"every row {report['first_cycle_vs_rebuild_writing_all']}x"
        )
        for name, ms in report["ttfb_ms"].items():
            ratio = report["vs_datasette_default"].get(name)
            target = f"  (target {TARGETS[name]})" if name in TARGETS else ""
            shown = f"{ratio:8.4f}x default" if ratio is not None else ""
            print(f"  {name:<22} {ms:10.2f} ms {shown}{target}")
        print(f"  viewer page / its fragment {report['viewer_page_vs_fragment']}x")
        for name, (_ratio, target) in against.items():
            print(f"  {name.replace('_', ' ')} {report[name]}x (target {target})")
        if more:
            print(f"  saves: {json.dumps(report['more_saves'])}")
        print(f"  targets missed: {json.dumps(report['targets_missed'])}")
        if bad:
            print(f"  Datasette did not answer 200 (its SQL time limit): {json.dumps(bad)}")
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
        if args.database == "postgres":
            drop_pg_database(pg_name)


if __name__ == "__main__":
    sys.exit(main())
