"""Projection benchmarks (PRODUCT.md §10), as ratios measured in one run.

    .venv/bin/python bench/bench_projections.py --rows 1000000          # SQLite, temp file
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/test \\
        .venv/bin/python bench/bench_projections.py --rows 1000000      # PostgreSQL, temp database
    .venv/bin/python bench/bench_projections.py --smoke                 # < 30 s

Rows are generated at run time (bulk executemany, not remember(), for speed) into a store of
10,000 rows, measured, then grown to --rows and measured again:
  (0) the first cycle after an import (no projection rows, every row a backlog) vs rebuild,
      with sessions_written beside the sessions the rebuild lands (sessions touched);
  (a) a cycle after 1,000 new rows at each size (mean of 9): rows_visited (its breakdown), time;
  (b) full rebuild of each store vs a plain ordered read + JSON parse of the same columns,
      and the rebuild's peak RSS growth at each size (memory flat as rows grow);
  (c) sessions() and digest() time and rows_visited at each size.
Nothing is written to the repository; the temp database is removed at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "omnia_site.settings")
os.environ.setdefault("OMNIA_TESTING", "1")  # a throwaway secret key, DEBUG off (no query log)

import django  # noqa: E402

django.setup()

from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402

OWNERS = 1000
LOCATIONS = 20
NEW_ROWS = 1000
CYCLES = 9  # cycles after NEW_ROWS each, per store size
WORLD = "bench-world"
BASE_US = 1_700_000_000_000_000
T0 = 1_783_339_200  # 2026-07-06T12:00:00Z
# The save every generated row belongs to (issue 16): raw SQL must name it, as the engine's does.
SAVE: list[int] = []


def rss_kb() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * (os.sysconf("SC_PAGE_SIZE") // 1024)


class PeakRss:
    """Samples RSS every 5 ms while a block runs: peak growth over the RSS at entry."""

    def __enter__(self) -> PeakRss:
        self.start = rss_kb()
        self.peak = self.start
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def _sample(self) -> None:
        while not self._stop.wait(0.005):
            self.peak = max(self.peak, rss_kb())

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, rss_kb())

    @property
    def growth_mb(self) -> float:
        return (self.peak - self.start) / 1024


# --- the store ------------------------------------------------------------------------------------


class Store:
    """Generates rows shaped like play: each owner talks in conversations of ~20 rows, with
    scene rows between them and, now and then, a world-time gap that cuts an episode."""

    def __init__(self, seed: int = 7) -> None:
        from memory.engine.shards import shard_of

        self.rng = random.Random(seed)
        self.count = 0
        self.owner_ids = [f"npc-{i:04d}" for i in range(OWNERS)]
        self.shard = {o: shard_of(o) for o in self.owner_ids}
        self.clock = dict.fromkeys(self.owner_ids, 0)
        self.conversation: dict[str, str | None] = dict.fromkeys(self.owner_ids)
        self.conversation_left = dict.fromkeys(self.owner_ids, 0)
        self.conversations = 0

    def world(self) -> None:
        with connection.cursor() as c:
            c.execute(
                "INSERT INTO objects (game_save_id, id, type, clock_iso) VALUES (%s, %s, 'world', %s)",
                (SAVE[0], WORLD, "2026-07-06T12:00:00.000Z"),
            )
            c.executemany(
                "INSERT INTO objects (game_save_id, id, type, world_id) "
                "VALUES (%s, %s, 'location', %s)",
                [(SAVE[0], f"room-{i}", WORLD) for i in range(LOCATIONS)],
            )
            c.executemany(
                "INSERT INTO attributes (game_save_id, object_id, name, value, visibility) "
                "VALUES (%s, %s, %s, %s, 'PUBLIC')",
                [
                    (SAVE[0], f"room-{i}", "description", f"a smoky room number {i}")
                    for i in range(LOCATIONS)
                ],
            )
            c.executemany(
                "INSERT INTO objects "
                "(game_save_id, id, type, world_id, location_id, aliases_json, is_agent) "
                "VALUES (%s, %s, 'entity', %s, %s, '[]', 1)",
                [(SAVE[0], o, WORLD, "room-0") for o in self.owner_ids],
            )

    def _row(self) -> tuple:
        rng = self.rng
        owner = self.owner_ids[rng.randrange(OWNERS)]
        self.clock[owner] += rng.choice((30, 60, 90, 120)) if rng.random() > 0.02 else 3600
        if self.conversation_left[owner] <= 0:
            self.conversations += 1
            self.conversation[owner] = f"conv-{self.conversations}" if rng.random() < 0.7 else None
            self.conversation_left[owner] = rng.randint(5, 35)
        self.conversation_left[owner] -= 1
        kind = "dialogue" if rng.random() < 0.4 else "action"
        intent = json.dumps(
            {
                "type": kind,
                "originalText": "words",
                "description": "a thing happens here",
                "actorId": owner,
                "targetIds": [],
            },
            separators=(",", ":"),
        )
        ts = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(T0 + self.clock[owner]))
        self.count += 1
        n = self.count
        return (
            SAVE[0],
            f"m{n:09d}",
            owner,
            ts,
            f"room-{int(owner[4:]) % LOCATIONS}",
            intent,
            None,
            BASE_US + n,
            self.shard[owner],
            self.conversation[owner],
        )

    def add(self, rows: int) -> None:
        sql = (
            "INSERT INTO buffer_entries (game_save_id, id, owner_id, timestamp, location_id, "
            "intent_json, outcome_json, created_at, shard, conversation_id) "
            "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)"
        )
        done = 0
        while done < rows:
            chunk = [self._row() for _ in range(min(20000, rows - done))]
            with connection.cursor() as c:
                c.executemany(sql, chunk)
            done += len(chunk)
        with connection.cursor() as c:
            c.execute(
                "UPDATE memory_projection_shards SET last_assigned_at = %s WHERE game_save_id = %s",
                (BASE_US + self.count, SAVE[0]),
            )
        if connection.vendor == "sqlite":
            with connection.cursor() as c:
                c.execute("ANALYZE")
        else:
            with connection.cursor() as c:
                c.execute("ANALYZE buffer_entries")


def plain_read(order: str) -> float:
    """The floor: every row's fold columns in one ordered read, each intent JSON-parsed."""
    from memory.engine.projections.rows import FOLD_COLUMNS

    started = time.perf_counter()
    if connection.vendor == "postgresql":
        # A server-side cursor, as a streaming reader would use.
        from django.db import transaction

        with transaction.atomic(), connection.connection.cursor(name="plain_read") as c:
            c.itersize = 10000
            c.execute(
                f"SELECT {FOLD_COLUMNS} FROM buffer_entries WHERE game_save_id = %s "
                f"ORDER BY {order}",
                SAVE,
            )
            for row in c:
                json.loads(row[5])
    else:
        with connection.cursor() as c:
            c.execute(
                f"SELECT {FOLD_COLUMNS} FROM buffer_entries WHERE game_save_id = %s "
                f"ORDER BY {order}",
                SAVE,
            )
            while rows := c.fetchmany(10000):
                for row in rows:
                    json.loads(row[5])
    return time.perf_counter() - started


def timed(fn, repeat: int = 5):
    times, result = [], None
    for _ in range(repeat):
        started = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - started)
    return statistics.median(times), result


def measure(store: Store, label: str, figures: dict) -> None:
    from django.db import transaction

    from memory.engine.projections import doors, rebuild, run_cycle

    size = store.count
    # The first cycle after an import: no projection rows yet, every row past a zero watermark.
    from memory.models import Episode, MemorySession, ProjectionShard

    MemorySession.objects.all().delete()
    Episode.objects.all().delete()
    ProjectionShard.objects.update(last_created_at=0, last_id="")
    with PeakRss() as first_rss:
        started = time.perf_counter()
        first = run_cycle()
        first_s = time.perf_counter() - started
    with PeakRss() as rss:
        started = time.perf_counter()
        rebuilt = rebuild()
        rebuild_s = time.perf_counter() - started
    read_fold_order = plain_read("owner_id, created_at, id")
    read_created_order = plain_read("created_at, id")

    cycles = []
    for _ in range(CYCLES):
        store.add(NEW_ROWS)
        started = time.perf_counter()
        result = run_cycle()
        cycles.append((time.perf_counter() - started, result))
    # The mean, not the median: SQLite's WAL checkpoint falls in some cycles and not others
    # (every few cycles at 1M rows), and its cost is the cycles' cost, shared out.
    cycle_s = statistics.mean(t for t, _ in cycles)
    result = cycles[-1][1]

    owner = store.owner_ids[0]
    with transaction.atomic():
        sessions_s, page = timed(lambda: doors.sessions(owner))
        digest_s, dig = timed(lambda: doors.digest(owner))
    figures[label] = {
        "rows": size,
        "sessions": rebuilt.sessions,
        "episodes": rebuilt.episodes,
        "first_cycle_s": round(first_s, 3),
        "first_cycle_vs_rebuild": round(first_s / rebuild_s, 2),
        "first_cycle_rows_folded": first.rows_folded,
        "first_cycle_sessions_written": first.sessions_written,
        "first_cycle_episodes_written": first.episodes_written,
        "first_cycle_rss_growth_mb": round(first_rss.growth_mb, 1),
        "rebuild_s": round(rebuild_s, 3),
        "rebuild_rss_growth_mb": round(rss.growth_mb, 1),
        "plain_read_parse_fold_order_s": round(read_fold_order, 3),
        "plain_read_parse_created_order_s": round(read_created_order, 3),
        "rebuild_vs_plain_read_fold_order": round(rebuild_s / read_fold_order, 2),
        "rebuild_vs_plain_read_created_order": round(rebuild_s / read_created_order, 2),
        "cycle_ms": round(cycle_s * 1000, 1),
        "cycle_ms_each": [round(t * 1000, 1) for t, _ in cycles],
        "cycle_rows_visited": result.rows_visited,
        "cycle_rows_folded": result.rows_folded,
        "cycle_session_rows_read": result.session_rows_read,
        "cycle_episode_rows_read": result.episode_rows_read,
        "cycle_sessions_written": result.sessions_written,
        "sessions_door_ms": round(sessions_s * 1000, 2),
        "sessions_door_rows_visited": page.rows_visited,
        "digest_door_ms": round(digest_s * 1000, 2),
        "digest_door_rows_visited": dig.rows_visited,
    }
    print(label, json.dumps(figures[label]), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=1_000_000, help="size of the big store")
    parser.add_argument("--small", type=int, default=10_000, help="size of the small store")
    parser.add_argument("--smoke", action="store_true", help="2,000 and 20,000 rows: a quick check")
    args = parser.parse_args()
    small, big = (2_000, 20_000) if args.smoke else (args.small, args.rows)

    settings_dict = connection.settings_dict
    tmpdir = None
    if connection.vendor == "sqlite":
        tmpdir = tempfile.mkdtemp(prefix="bench_projections_")
        settings_dict["NAME"] = os.path.join(tmpdir, "bench.sqlite3")
    else:
        import psycopg

        name = f"bench_projections_{os.getpid()}"
        admin = psycopg.connect(
            host=settings_dict["HOST"],
            port=settings_dict["PORT"] or 5432,
            user=settings_dict["USER"],
            password=settings_dict["PASSWORD"] or None,
            dbname=settings_dict["NAME"],
            autocommit=True,
        )
        admin.execute(f'CREATE DATABASE "{name}"')
        original_db = settings_dict["NAME"]
        settings_dict["NAME"] = name
    try:
        call_command("migrate", verbosity=0)
        from memory.active_save import activate
        from memory.engine.shards import ensure_shards
        from memory.models import Save

        # One save holds the generated store, active for the whole run (as `--save` would be).
        save = Save.objects.create(name="bench-projections", kind="scenario", era="v2")
        SAVE.append(save.pk)
        activate(save)

        ensure_shards()
        store = Store()
        store.world()
        figures: dict = {"backend": connection.vendor}
        store.add(small)
        measure(store, "small", figures)
        store.add(big - store.count)
        measure(store, "big", figures)
        s, b = figures["small"], figures["big"]
        figures["cycle_time_ratio_big_vs_small"] = round(b["cycle_ms"] / s["cycle_ms"], 2)
        figures["rebuild_rss_growth_ratio_big_vs_small"] = (
            round(b["rebuild_rss_growth_mb"] / s["rebuild_rss_growth_mb"], 2)
            if s["rebuild_rss_growth_mb"]
            else None
        )
        print(json.dumps(figures, indent=2))
    finally:
        connection.close()
        if tmpdir:
            for f in Path(tmpdir).iterdir():
                f.unlink()
            os.rmdir(tmpdir)
        else:
            settings_dict["NAME"] = original_db
            admin.execute(f'DROP DATABASE IF EXISTS "{name}"')
            admin.close()


if __name__ == "__main__":
    main()
