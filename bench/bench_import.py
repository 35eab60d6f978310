"""Import throughput of an omnia world file, as a ratio to a plain sqlite3 row copy.

    .venv/bin/python bench/bench_import.py --rows 1000000      # the figure in bench/README.md
    .venv/bin/python bench/bench_import.py --smoke             # CI: seconds
    .venv/bin/python bench/bench_import.py --rows 1000000 --saves 3   # issue 16: saves present

The world file is generated at run time in a temporary directory (never committed). Each
measured step runs in its own child process so its peak RSS (ru_maxrss) is its own: an
import that streams keeps the same peak at 100k rows as at 1M.

Every import lands in a save (issue 16). With `--saves N` the same file is imported once into
an empty store and N + 1 times into a store holding the demo world, as saves `bench-1` …
(`as_name`): the last import (N saves of the same world present) over the first (none) is the
ratio, in the same run; only the --rows size is measured then (see measure_saves).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from memory.worlds.ddl import OMNIA_V1_DDL  # noqa: E402  (pure module, no Django needed)

ENTITIES = 200


def generate_world(path: Path, rows: int) -> None:
    conn = sqlite3.connect(path)
    conn.executescript(OMNIA_V1_DDL)
    conn.execute(
        "INSERT INTO objects VALUES ('bench-world','world',NULL,'2026-07-06T12:00:00.000Z',NULL,NULL)"
    )
    for i in range(ENTITIES):
        aliases = json.dumps(
            [[f"npc-{(i + 1) % ENTITIES}", f"the stranger {i}"]], separators=(",", ":")
        )
        conn.execute(
            "INSERT INTO objects VALUES (?, 'entity', 'bench-world', NULL, 'hall', ?)",
            (f"npc-{i}", aliases),
        )
        conn.execute(
            "INSERT INTO attributes VALUES (?, 'name', ?, 'PRIVATE')", (f"npc-{i}", f"Name{i}")
        )

    def buffer_rows():
        for n in range(rows):
            owner = f"npc-{n % ENTITIES}"
            actor = f"npc-{(n * 7) % ENTITIES}"
            seconds = n // 10
            ts = f"2026-07-06T{12 + seconds // 3600 % 12:02d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}.000Z"
            if n % 3:
                intent = {
                    "type": "action",
                    "originalText": "x",
                    "description": f"opens door {n}",
                    "actorId": actor,
                    "targetIds": [],
                }
                outcome = '{"isValid":true,"reason":"ok"}'
            else:
                intent = {
                    "type": "dialogue",
                    "originalText": "x",
                    "description": f"hello {n}",
                    "actorId": actor,
                    "targetIds": [owner],
                }
                outcome = None
            yield (
                f"e{n:08d}",
                owner,
                ts,
                "hall",
                json.dumps(intent, separators=(",", ":")),
                outcome,
            )

    conn.executemany("INSERT INTO buffer_entries VALUES (?,?,?,?,?,?)", buffer_rows())
    conn.commit()
    conn.close()


def child_copy(source: str, target: str) -> dict:
    """The floor: read every buffer row with sqlite3 and insert it into an omnia-schema file."""
    started = time.perf_counter()
    src = sqlite3.connect(source)
    dst = sqlite3.connect(target)
    dst.executescript(OMNIA_V1_DDL)
    cursor = src.execute("SELECT * FROM buffer_entries ORDER BY rowid")
    dst.execute("PRAGMA foreign_keys=OFF")
    while batch := cursor.fetchmany(5000):
        dst.executemany("INSERT INTO buffer_entries VALUES (?,?,?,?,?,?)", batch)
    dst.commit()
    return {"seconds": time.perf_counter() - started}


def child_import(source: str, saves: str = "1", demo: str = "") -> dict:
    """Import `source` `saves` times into one inspector database, as saves bench-1 … bench-N;
    with `demo`, the demo world is loaded first (as `make run` does), so no import meets an
    empty table."""
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "omnia_site.settings")
    os.environ.setdefault("OMNIA_TESTING", "1")
    django.setup()
    from django.core.management import call_command

    from memory.worlds.demo import load_demo
    from memory.worlds.omnia_import import import_omnia

    call_command("migrate", verbosity=0)
    if demo:
        load_demo()
    seconds, rows = [], []
    for n in range(1, int(saves) + 1):
        started = time.perf_counter()
        # The same file under a new name each time: a save beside the others, not a no-op.
        report = import_omnia(source, as_name=f"bench-{n}")
        seconds.append(time.perf_counter() - started)
        rows.append(report.counts["buffer_entries"])
    return {"seconds": seconds[0], "rows": rows[0], "each_s": seconds, "each_rows": rows}


def run_child(kind: str, *args: str, env: dict | None = None) -> dict:
    out = subprocess.run(
        [sys.executable, __file__, "--child", kind, *args],
        check=True,
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        cwd=ROOT,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def measure(rows: int, tmp: Path, database_url: str | None) -> dict:
    world = tmp / f"world-{rows}.sqlite"
    generate_world(world, rows)
    copy = run_child("copy", str(world), str(tmp / f"copy-{rows}.sqlite"))
    imported = run_child(
        "import", str(world), env=_fresh_store(tmp, f"inspector-{rows}", database_url)
    )
    return {
        "rows": rows,
        "copy_s": round(copy["seconds"], 3),
        "import_s": round(imported["seconds"], 3),
        "ratio": round(imported["seconds"] / copy["seconds"], 2),
        "import_rows_per_s": round(rows / imported["seconds"]),
        "import_peak_rss_mb": imported["peak_rss_mb"],
        "import_validator_peak_rss_mb": imported["helper_peak_rss_mb"],
        "copy_peak_rss_mb": copy["peak_rss_mb"],
    }


def measure_saves(rows: int, tmp: Path, database_url: str | None, present: int) -> dict:
    """Issue 16: the same import with `present` saves of the same world already in the store.

    Two stores, in order. An empty one takes one import: the only kind that finds
    buffer_entries empty, so the only one that builds its indexes after its rows
    (`indexes_built_after`). A served one (the demo world loaded, as `make run` leaves it)
    takes `present + 1` imports: its first meets only the demo, its last `present` saves of
    this world; last / first is the cost of the saves present, each import keeping the
    indexes current row by row."""
    world = tmp / f"world-{rows}.sqlite"
    generate_world(world, rows)
    empty = run_child("import", str(world), env=_fresh_store(tmp, "empty", database_url))
    served = run_child(
        "import",
        str(world),
        str(present + 1),
        "demo",
        env=_fresh_store(tmp, "served", database_url),
    )
    each = served["each_s"]
    assert served["each_rows"] == [rows] * (present + 1), served["each_rows"]
    return {
        "rows": rows,
        "saves_present": present,
        "empty_store_s": round(empty["seconds"], 3),
        "served_each_s": [round(x, 3) for x in each],
        "last_vs_first": round(each[-1] / each[0], 3),
        "last_vs_empty_store": round(each[-1] / empty["seconds"], 3),
        "import_peak_rss_mb": served["peak_rss_mb"],
    }


def _fresh_store(tmp: Path, name: str, database_url: str | None) -> dict:
    """The environment of a child that imports into a new, empty inspector database."""
    if database_url:
        _reset_postgres(database_url)
        return {"DATABASE_URL": database_url}
    return {"DATABASE_URL": f"sqlite:///{tmp / f'{name}.sqlite3'}"}


def _reset_postgres(url: str) -> None:
    import psycopg

    with psycopg.connect(url.replace("postgres://", "postgresql://"), autocommit=True) as conn:
        conn.execute("DROP SCHEMA public CASCADE")
        conn.execute("CREATE SCHEMA public")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--smoke", action="store_true", help="tiny sizes, for CI")
    parser.add_argument(
        "--database-url", help="import into this PostgreSQL instead of a temp SQLite"
    )
    parser.add_argument(
        "--saves",
        type=int,
        default=0,
        help="issue 16: import with N saves of the same world present vs with none",
    )
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        kind, *rest = args.child
        result = child_copy(*rest) if kind == "copy" else child_import(*rest)
        result["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
        # A large import validates in a second process (memory.worlds.validation.BatchValidator): its
        # peak is reported beside the importer's, not hidden.
        result["helper_peak_rss_mb"] = round(
            resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024, 1
        )
        print(json.dumps(result))
        return
    if args.smoke:
        args.rows, args.saves = 4_000, 2
    if args.saves:
        with tempfile.TemporaryDirectory(prefix="omnia-bench-") as tmp:
            result = measure_saves(args.rows, Path(tmp), args.database_url, args.saves)
        print(json.dumps(result))
        each = result["served_each_s"]
        print(
            f"import {result['rows']:,} rows beside the demo: {each[0]} s; with {args.saves} "
            f"saves of the same world present: {each[-1]} s -> ratio {result['last_vs_first']} "
            f"(all: {each}); into an empty store: {result['empty_store_s']} s (ratio "
            f"{result['last_vs_empty_store']}); peak RSS {result['import_peak_rss_mb']} MB"
        )
        if not args.smoke:
            return
    sizes = [1_000, 4_000] if args.smoke else [args.rows // 10, args.rows]
    with tempfile.TemporaryDirectory(prefix="omnia-bench-") as tmp:
        results = [measure(n, Path(tmp), args.database_url) for n in sizes]
    for result in results:
        print(json.dumps(result))
    small, big = results
    print(
        f"import {big['rows']:,} rows: {big['import_s']} s vs sqlite3 copy {big['copy_s']} s "
        f"-> ratio {big['ratio']} (target <= 3); peak RSS {small['import_peak_rss_mb']} MB at "
        f"{small['rows']:,} rows, {big['import_peak_rss_mb']} MB at {big['rows']:,} rows"
    )


if __name__ == "__main__":
    main()
