"""Projection benchmarks on the user's path (PRODUCT.md §10, issue 25), as ratios measured in
one run.

    .venv/bin/python bench/bench_projections.py                       # SQLite: 10,000 and 1M rows
    .venv/bin/python bench/bench_projections.py --database postgres   # the same on PostgreSQL
    .venv/bin/python bench/bench_projections.py --shape readable-v1   # another world shape
    .venv/bin/python bench/bench_projections.py --smoke               # 1,000 and 4,000 rows (CI)

Two stores, --small rows then --rows (2,000 entities, one viewer with a tenth of the rows),
each brought in as README tells a user, every step a `manage.py` command in its own process:
an omnia save is generated (memory/worlds/synthetic.py) → `migrate` → `import_omnia FILE` →
`run_projections` (the first cycle after the import, leak findings included) →
`rebuild_projections` (leak findings included) → the floor, one ordered read + JSON parse of
the same rows (bench_viewer's). Nothing is ANALYZEd or tuned by hand. Then, in a
`manage.py shell` on that store, rows arrive through the write door as a game's would:
  (0) the first cycle after the import vs the rebuild, with the sessions each wrote;
  (a) a cycle after 1,000 new rows (mean of 9): time, rows_visited and its breakdown — flat
      from the small store to the big one;
  (b) the rebuild vs the floor, and each command's peak RSS at both sizes (memory flat as
      rows grow);
  (c) sessions() and digest() of the busiest viewer: time and rows_visited.
The generated files and the stores live in a temporary directory (or temporary PostgreSQL
databases), removed at the end.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

from _harness import (
    FLOOR,
    Shape,
    drop_pg_database,
    generate_omnia_world,
    manage,
    reset_pg_database,
    store_env,
    timed_manage,
    timed_manage_peak,
)

SAVE = "harbour"

# Rows written through the door, then one cycle, CYCLES times: printed as one JSON line.
CYCLES = """
import json, random, statistics, time
from django.db import transaction
from memory.active_save import use
from memory.engine.projections import doors, run_cycle
from memory.engine.write_door import remember
from memory.models import Save, WorldObject
rng = random.Random(7)
save = Save.objects.get(name={name!r})
with use(save):
    owners = list(WorldObject.objects.filter(type="entity").order_by("id")
                  .values_list("id", flat=True))
    cycles = []
    for n in range({cycles}):
        with transaction.atomic():
            for i in range({new_rows}):
                owner, other = rng.choice(owners), rng.choice(owners)
                kind = rng.choice(("action", "dialogue", "thought"))
                remember(owner, {{"type": kind, "actorId": owner, "targetIds": [other],
                                  "content": f"entity@{{owner}}[I] mend a net near entity@{{other}}[them]"}},
                         timestamp=f"2027-01-01T{{n:02d}}:{{i // 60 % 60:02d}}:{{i % 60:02d}}.000Z")
        started = time.perf_counter()
        result = run_cycle()
        cycles.append((time.perf_counter() - started, result))
    timings = {{}}
    for door in (doors.sessions, doors.digest):
        samples = []
        for _ in range(5):
            started = time.perf_counter()
            answer = door({viewer!r})
            samples.append(time.perf_counter() - started)
        timings[door.__name__] = (statistics.median(samples), answer.rows_visited)
last = cycles[-1][1]
print(json.dumps({{
    # The mean, not the median: SQLite's WAL checkpoint falls in some cycles and not others,
    # and its cost is the cycles' cost, shared out.
    "cycle_ms": round(statistics.mean(t for t, _ in cycles) * 1000, 1),
    "cycle_ms_each": [round(t * 1000, 1) for t, _ in cycles],
    "cycle_rows_visited": last.rows_visited,
    "cycle_rows_folded": last.rows_folded,
    "cycle_session_rows_read": last.session_rows_read,
    "cycle_episode_rows_read": last.episode_rows_read,
    "cycle_sessions_written": last.sessions_written,
    "sessions_door_ms": round(timings["sessions"][0] * 1000, 2),
    "sessions_door_rows_visited": timings["sessions"][1],
    "digest_door_ms": round(timings["digest"][0] * 1000, 2),
    "digest_door_rows_visited": timings["digest"][1],
}}))
"""


def last_json(text: str) -> dict:
    return json.loads(text.strip().splitlines()[-1])


def measure(workdir: Path, label: str, shape: Shape, url: str, cycles: int, new_rows: int) -> dict:
    """One store of `shape` at `url`, brought in and measured on the user's path."""
    world_file = workdir / f"{label}.sqlite"
    env = store_env(url)
    info = generate_omnia_world(world_file, shape)
    manage(env, "migrate", "-v0")
    import_s = timed_manage(env, "import_omnia", str(world_file), "--as", SAVE)
    first_s, first_rss, first_out = timed_manage_peak(env, "run_projections", "--json")
    rebuild_s, rebuild_rss, rebuild_out = timed_manage_peak(env, "rebuild_projections", "--json")
    floor = manage(env, "shell", "-c", FLOOR.format(name=SAVE))
    floor_s = float(floor.stdout.strip().splitlines()[-1])
    first, rebuilt = last_json(first_out), last_json(rebuild_out)
    code = CYCLES.format(name=SAVE, viewer=info["viewer"], cycles=cycles, new_rows=new_rows)
    after = last_json(manage(env, "shell", "-c", code).stdout)
    figures = {
        "rows": info["rows"],
        "entities": info["entities"],
        "viewer_rows": info["viewer_rows"],
        "import_s": round(import_s, 3),
        "first_cycle_s": round(first_s, 3),
        "first_cycle_vs_rebuild": round(first_s / rebuild_s, 2),
        "first_cycle_rows_folded": first["rows_folded"],
        "first_cycle_sessions_written": first["sessions_written"],
        "first_cycle_peak_rss_mb": round(first_rss, 1),
        "rebuild_s": round(rebuild_s, 3),
        "rebuild_sessions": rebuilt["sessions"],
        "rebuild_episodes": rebuilt["episodes"],
        "rebuild_leak_viewers_scanned": rebuilt["leak_viewers_scanned"],
        "rebuild_peak_rss_mb": round(rebuild_rss, 1),
        "read_parse_floor_s": round(floor_s, 3),
        "rebuild_vs_floor": round(rebuild_s / floor_s, 2),
        **after,
    }
    print(label, json.dumps(figures), flush=True)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=1_000_000, help="size of the big store")
    parser.add_argument("--small", type=int, default=10_000, help="size of the small store")
    parser.add_argument("--entities", type=int, default=2_000)
    parser.add_argument("--shape", default="uuid-head", help="uuid-head or readable-v1")
    parser.add_argument("--database", choices=("sqlite", "postgres"), default="sqlite")
    parser.add_argument("--smoke", action="store_true", help="1,000 and 4,000 rows: proves it runs")
    args = parser.parse_args()
    small, big, entities = (args.small, args.rows, args.entities)
    cycles, new_rows = 9, 1000
    if args.smoke:
        small, big, entities, cycles, new_rows = 1_000, 4_000, 50, 2, 100
    workdir = Path(tempfile.mkdtemp(prefix="bench_projections_"))
    made: list[str] = []
    figures: dict = {"database": args.database, "shape": args.shape}
    try:
        for label, rows in (("small", small), ("big", big)):
            shape = Shape.named(args.shape, rows=rows, entities=entities, hot_rows=rows // 10)
            if args.database == "postgres":
                made.append(f"bench_projections_{label}_{int(time.time())}")
                url = reset_pg_database(made[-1])
            else:
                url = f"sqlite:///{workdir / f'{label}-store.sqlite3'}"
            figures[label] = measure(workdir, label, shape, url, cycles, new_rows)
        s, b = figures["small"], figures["big"]
        figures["cycle_time_ratio_big_vs_small"] = round(b["cycle_ms"] / s["cycle_ms"], 2)
        figures["rebuild_rss_ratio_big_vs_small"] = round(
            b["rebuild_peak_rss_mb"] / s["rebuild_peak_rss_mb"], 2
        )
        figures["first_cycle_rss_ratio_big_vs_small"] = round(
            b["first_cycle_peak_rss_mb"] / s["first_cycle_peak_rss_mb"], 2
        )
        print(json.dumps(figures, indent=2))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
        for name in made:
            drop_pg_database(name)


if __name__ == "__main__":
    sys.exit(main())
