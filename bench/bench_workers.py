"""Projection worker throughput on PostgreSQL: 1 vs 2 `run_projections --loop` processes
folding the same backlog.

    .venv/bin/python bench/bench_workers.py                 # 60,000-row backlog, 4 shards
    .venv/bin/python bench/bench_workers.py --smoke         # 5,000 rows (CI)
    OMNIA_BENCH_PG=postgres://postgres@127.0.0.1:5432/test (default; bench/_harness.py)

A dedicated database (--db, default omnia_workers) is dropped and created and the backlog
brought in as a user brings a save: a generated omnia file (memory/worlds/synthetic.py, shape
uuid-head, 200 entities) through `manage.py migrate` and `import_omnia --as bench-workers`,
nothing folded. For each configuration the projections are reset (sessions and
episodes emptied, watermarks to zero) and the workers are started as real processes; the
clock runs from their start until every shard's lag is zero (so process start-up, ~1 s, is
included). Each run ends with verify(): no drift, every row counted exactly once. The
database is dropped at the end unless --keep.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from contextlib import closing
from pathlib import Path

from _harness import (
    ROOT,
    Shape,
    drop_pg_database,
    generate_omnia_world,
    manage,
    reset_pg_database,
    store_env,
)


def worker_env(url: str) -> dict[str, str]:
    env = dict(os.environ)
    # DEBUG off: with it on Django keeps every query in memory, which skews a long fold.
    env.update(
        {
            "DATABASE_URL": url,
            "OMNIA_DEBUG": "0",
            "OMNIA_SECRET_KEY": "bench-only",
            "PYTHONUNBUFFERED": "1",
        }
    )
    return env


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=60_000, help="backlog size")
    parser.add_argument("--smoke", action="store_true", help="5,000 rows")
    parser.add_argument("--db", default="omnia_workers", help="database to (re)create")
    parser.add_argument("--keep", action="store_true", help="keep the database afterwards")
    args = parser.parse_args()
    rows = 5_000 if args.smoke else args.rows

    url = reset_pg_database(args.db)
    work = Path(tempfile.mkdtemp(prefix="omnia-workers-"))
    game = work / "backlog.sqlite3"
    generate_omnia_world(
        game, Shape.named("uuid-head", rows=rows, entities=200, hot_rows=rows // 10)
    )
    # The generator ends on a whole moment (every witness of it written): a few rows past
    # --rows. Each must be counted once, so count what it wrote.
    with closing(sqlite3.connect(game)) as conn:
        rows = conn.execute("SELECT count(*) FROM buffer_entries").fetchone()[0]
    env = store_env(url)
    manage(env, "migrate", "--no-input", "-v0")
    started = time.perf_counter()
    # The backlog is one save; the workers are started without --save, so they fold every
    # save in turn, as a deployment runs them.
    manage(env, "import_omnia", str(game), "--as", "bench-workers")
    shutil.rmtree(work)
    os.environ.update(env)
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.db import connection

    from memory.active_save import activate
    from memory.engine.projections import verify
    from memory.engine.projections.worker import projection_status
    from memory.engine.saves import get_save
    from memory.engine.shards import shard_count
    from memory.models import Episode, MemorySession

    activate(get_save("bench-workers"))
    print(
        f"backlog: {rows} rows imported in {time.perf_counter() - started:.1f}s, {shard_count()} shards"
    )

    def reset_projections() -> None:
        with connection.cursor() as c:
            c.execute(f"TRUNCATE {MemorySession._meta.db_table}, {Episode._meta.db_table}")
            c.execute(
                "UPDATE memory_projection_shards SET last_created_at = 0, last_id = '', "
                "last_cycle_at = NULL, last_cycle_rows = 0"
            )

    configurations = [
        ("1 worker", [[]]),
        ("2 workers (shared, SKIP LOCKED)", [[], []]),
        ("2 workers (--shards split)", [["--shards", "0,1"], ["--shards", "2,3"]]),
    ]
    if shard_count() != 4:
        configurations = configurations[:2]
    figures = []
    for label, worker_args in configurations:
        reset_projections()
        t0 = time.perf_counter()
        procs = [
            subprocess.Popen(
                [
                    sys.executable,
                    "manage.py",
                    "run_projections",
                    "--loop",
                    "--poll",
                    "0.5",
                    "--json",
                    *extra,
                ],
                cwd=ROOT,
                env=worker_env(url),
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for extra in worker_args
        ]
        while projection_status()["lag_rows"]:
            time.sleep(0.1)
        elapsed = time.perf_counter() - t0
        folded = []
        for proc in procs:
            proc.send_signal(signal.SIGTERM)
            out, err = proc.communicate(timeout=60)
            if proc.returncode == -signal.SIGTERM and not out.strip():
                # Stopped before it was up (its handler not yet installed): the others had
                # folded the backlog while it started, as a small one can be on a busy machine.
                folded.append(0)
                continue
            if proc.returncode != 0:
                raise SystemExit(f"worker failed (exit {proc.returncode}): {err}")
            folded.append(json.loads(out.strip().splitlines()[-1])["rows_folded"])
        checked = verify()
        counted = sum(MemorySession.objects.values_list("memory_count", flat=True))
        row = {
            "configuration": label,
            "rows": rows,
            "seconds": round(elapsed, 2),
            "rows_per_second": round(rows / elapsed),
            "rows_folded_per_worker": folded,
            "drift": len(checked.drift),
            "rows_counted": counted,
        }
        assert not checked.drift and counted == rows == sum(folded), row
        figures.append(row)
        print(json.dumps(row))
    base = figures[0]["rows_per_second"]
    for row in figures[1:]:
        print(f"{row['configuration']}: {row['rows_per_second'] / base:.2f}x one worker")
    connection.close()
    if not args.keep:
        drop_pg_database(args.db)


if __name__ == "__main__":
    main()
