"""What events cost the buffer (issue 27): a buffer page with its "seen by N" counts against the
same page with the counts stubbed out, in one process on one store, alternated; then the
count statement alone, its plan, the event page and its twin, and the search across the save
(a rare word, a word in most rows, a word only the renderer writes).

    .venv/bin/python bench/bench_events.py                       # 1M rows, SQLite
    .venv/bin/python bench/bench_events.py --database postgres   # the same on PostgreSQL
    .venv/bin/python bench/bench_events.py --smoke               # 3,000 rows (CI)

The store is made on the user's path (`generate_omnia_world` → `migrate` → `import_omnia`),
nothing tuned by hand. Timings are the Django test client's, in-process (no server), median
of --repeat after a warm-up, the two variants alternated so a busy machine slows both alike.
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from pathlib import Path

from _harness import (
    Shape,
    drop_pg_database,
    generate_omnia_world,
    manage,
    reset_pg_database,
    store_env,
    timed_manage,
)

MEASURE = """
import json, statistics, time
from urllib.parse import quote
from django.contrib.auth.models import User
from django.db import connection
from django.test import Client
from memory.active_save import among, scoped_cursor, use
from memory.engine import events
from memory.engine.knowledge import get_viewer
from memory.engine.saves import get_save
from memory.selectors import buffer as buffer_reads
from memory.selectors import events as event_reads

REPEAT = {repeat}
viewer_id = {viewer!r}
user = User.objects.create_user("bench-events", is_staff=True, is_superuser=True)
client = Client()
client.force_login(user)
real = event_reads.buffer_events
STUB = "x~" + "0" * 16

def stubbed(viewer, entries):
    return {{e.id: event_reads.EventRef(STUB, 0) for e in entries}}

def ms(fn):
    started = time.perf_counter()
    fn()
    return (time.perf_counter() - started) * 1000

def ab(path, headers):
    on, off = [], []
    for variant in (True, False):  # warm-up
        event_reads.buffer_events = real if variant else stubbed
        assert client.get(path, headers=headers).status_code == 200
    for _ in range(REPEAT):
        for variant, out in ((True, on), (False, off)):
            event_reads.buffer_events = real if variant else stubbed
            out.append(ms(lambda: client.get(path, headers=headers)))
    event_reads.buffer_events = real
    return {{"with_ms": round(statistics.median(on), 2), "stubbed_ms": round(statistics.median(off), 2),
            "added_ms": round(statistics.median(on) - statistics.median(off), 2)}}

save = "harbour"
v = quote(viewer_id)
out = {{
    "buffer_fragment": ab(f"/saves/{{save}}/viewers/{{v}}/buffer/", {{"HX-Request": "true"}}),
    "api_buffer": ab(f"/api/saves/{{save}}/viewers/{{v}}/buffer", {{}}),
}}
with use(get_save(save)):
    viewer = get_viewer(viewer_id)
    page = buffer_reads.buffer_page(viewer)
    real(viewer, page.entries)
    alone = sorted(ms(lambda: real(viewer, page.entries)) for _ in range(REPEAT))
    out["counts_for_one_page_ms"] = round(alone[len(alone) // 2], 3)
    out["page_lines"] = len(page.entries)
    refs = real(viewer, page.entries)
    out["witnesses_on_the_page"] = sum(r.witness_count for r in refs.values())
    stamps = sorted({{e.timestamp for e in page.entries}})
    asked, params = among("b.timestamp", stamps)
    sql = events._ROWS_AT.format(stamps=asked)
    explain = "EXPLAIN QUERY PLAN " if connection.vendor == "sqlite" else "EXPLAIN "
    with scoped_cursor() as cursor:
        cursor.execute(explain + sql, params)
        out["plan"] = [" ".join(str(c) for c in row) for row in cursor.fetchall()]
    event = refs[page.entries[-1].id].event
out["event_page"] = {{}}
for name, path in (("page", f"/saves/{{save}}/events/{{quote(event)}}/"),
                   ("api", f"/api/saves/{{save}}/events/{{quote(event)}}")):
    assert client.get(path).status_code == 200
    times = sorted(ms(lambda: client.get(path)) for _ in range(REPEAT))
    out["event_page"][name + "_ms"] = round(times[len(times) // 2], 2)
out["search_ms"] = {{}}
for label, q in (("rare_word", {word!r}), ("common_word", "keeper"), ("renderer_word", "you")):
    path = f"/api/saves/{{save}}/search?q={{quote(q)}}"
    body = client.get(path).json()
    times = sorted(ms(lambda: client.get(path)) for _ in range(REPEAT))
    out["search_ms"][label] = {{"q": q, "median_ms": round(times[len(times) // 2], 2),
                              "events": len(body["items"]), "searched_to": body["searched_to"]}}
print(json.dumps(out))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--entities", type=int, default=2_000)
    parser.add_argument("--hot-rows", type=int, default=100_000, help="the busy viewer's rows")
    parser.add_argument("--database", choices=("sqlite", "postgres"), default="sqlite")
    parser.add_argument("--repeat", type=int, default=21)
    parser.add_argument("--smoke", action="store_true", help="3,000 rows: proves it runs")
    args = parser.parse_args()
    if args.smoke:
        args.rows, args.entities, args.hot_rows, args.repeat = 3_000, 60, 300, 1
    shape = Shape.named("uuid-head", rows=args.rows, entities=args.entities, hot_rows=args.hot_rows)
    workdir = Path(tempfile.mkdtemp(prefix="bench_events_"))
    world_file = workdir / "harbour.sqlite"
    pg_name = f"bench_events_{int(time.time())}"
    if args.database == "postgres":
        url = reset_pg_database(pg_name)
    else:
        url = f"sqlite:///{workdir / 'store.sqlite3'}"
    env = store_env(url)
    try:
        started = time.perf_counter()
        info = generate_omnia_world(world_file, shape)
        generate_s = time.perf_counter() - started
        manage(env, "migrate", "-v0")
        import_s = timed_manage(env, "import_omnia", str(world_file))
        code = MEASURE.format(repeat=args.repeat, viewer=info["viewer"], word=info["word"])
        measured = json.loads(manage(env, "shell", "-c", code).stdout.strip().splitlines()[-1])
        report = {
            "database": args.database,
            "rows": args.rows,
            "entities": args.entities,
            "hot_rows": args.hot_rows,
            "generate_s": round(generate_s, 1),
            "import_s": round(import_s, 1),
            **measured,
        }
        print(json.dumps(report, indent=2))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
        if args.database == "postgres":
            drop_pg_database(pg_name)


if __name__ == "__main__":
    main()
