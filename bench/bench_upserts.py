"""The projection writes, raw executemany vs bulk_create(update_conflicts=True), in one run.

    .venv/bin/python bench/bench_upserts.py                  # SQLite, temp file, 12,000 rows
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/test \\
        .venv/bin/python bench/bench_upserts.py              # PostgreSQL, temp database
    .venv/bin/python bench/bench_upserts.py --smoke          # < 10 s

For sessions and episodes: insert --rows rows into an empty table (what rebuild does), upsert
700 rows half of which exist (what one projection cycle writes), upsert all --rows rows. Each
timed inside a transaction, the model objects built inside the timing (the ORM needs them);
median of --repeat runs. Both ways must leave the same rows, or the script fails.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "omnia_site.settings")
os.environ.setdefault("OMNIA_TESTING", "1")

import django  # noqa: E402

django.setup()

from django.core.management import call_command  # noqa: E402
from django.db import connection, transaction  # noqa: E402

from memory.engine.projections import episodes, sessions  # noqa: E402
from memory.models import Episode, MemorySession  # noqa: E402

T1, T2 = "2026-07-06T12:00:00.000Z", "2026-07-06T12:05:00.000Z"


def session_states(n: int, bump: int = 0, owner: str | None = None) -> list:
    return [
        sessions.SessionState(
            owner or f"o{i % 1000}", f"k{i}", T1, T2, i + bump, bump, f"m{i}", "", ""
        )
        for i in range(n)
    ]


def episode_states(n: int, bump: int = 0, owner: str | None = None) -> list:
    return [
        episodes.EpisodeState(
            owner or f"o{i % 1000}", i, T1, T2, f"f{i}", f"m{i}", i + bump, True, "", "", None
        )
        for i in range(n)
    ]


def orm_sessions(states: list, upsert: bool) -> None:
    rows = [
        MemorySession(
            **dict(zip(sessions.SESSION_COLUMNS, sessions.session_values(s), strict=True))
        )
        for s in states
    ]
    if upsert:
        MemorySession.objects.bulk_create(
            rows,
            update_conflicts=True,
            unique_fields=["game_save", "owner_id", "session_key"],
            update_fields=list(sessions.SESSION_COLUMNS[2:]),
        )
    else:
        MemorySession.objects.bulk_create(rows)


def orm_episodes(states: list, upsert: bool) -> None:
    columns = (
        "owner_id",
        "ordinal",
        "first_at",
        "last_at",
        "first_member_id",
        "last_member_id",
        "member_count",
        "is_open",
    )
    rows = [Episode(**dict(zip(columns, tuple(s[:8]), strict=True))) for s in states]
    if upsert:
        Episode.objects.bulk_create(
            rows,
            update_conflicts=True,
            unique_fields=["game_save", "owner_id", "ordinal"],
            update_fields=list(columns[2:]),
        )
    else:
        Episode.objects.bulk_create(rows)


def timed(write: Callable[[], object]) -> float:
    with transaction.atomic():
        start = time.perf_counter()
        write()
        return time.perf_counter() - start


def run(n: int, repeat: int) -> None:
    kinds = [
        (
            "sessions",
            MemorySession,
            sessions.insert_sessions,
            sessions.upsert_sessions,
            orm_sessions,
            session_states,
        ),
        (
            "episodes",
            Episode,
            episodes.insert_episodes,
            episodes.upsert_episodes,
            orm_episodes,
            episode_states,
        ),
    ]
    print(f"{connection.vendor}, {n} rows, median of {repeat}")
    for name, model, raw_insert, raw_upsert, orm, states in kinds:
        times: dict[tuple[str, str], list[float]] = {}
        contents = {}
        for _ in range(repeat):
            for way in ("raw", "orm"):
                model.objects.all().delete()
                first, cycle, again = (
                    states(n),
                    states(350, 1) + states(350, 0, "new"),
                    states(n, 2),
                )
                for step, batch, upsert in (
                    ("insert", first, False),
                    ("upsert 700", cycle, True),
                    ("upsert all", again, True),
                ):
                    if way == "raw":
                        write = partial(raw_upsert if upsert else raw_insert, batch)
                    else:
                        write = partial(orm, batch, upsert)
                    seconds = timed(write)
                    times.setdefault((step, way), []).append(seconds)
                contents[way] = sorted(
                    model.objects.values_list(*[f.attname for f in model._meta.concrete_fields][1:])
                )
        if contents["raw"] != contents["orm"]:
            raise SystemExit(f"{name}: the two ways left different rows")
        for step in ("insert", "upsert 700", "upsert all"):
            raw, orm_s = (
                statistics.median(times[(step, "raw")]),
                statistics.median(times[(step, "orm")]),
            )
            print(
                f"  {name:9} {step:11} raw {raw * 1000:8.1f} ms   bulk_create {orm_s * 1000:8.1f} ms   {orm_s / raw:5.2f}x"
            )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--rows",
        type=int,
        default=12_000,
        help="rows per table (a 300k-row store folds to ~12k sessions)",
    )
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--smoke", action="store_true", help="1,000 rows, once")
    args = parser.parse_args()
    n, repeat = (1_000, 1) if args.smoke else (args.rows, args.repeat)

    settings_dict = connection.settings_dict
    tmpdir = None
    if connection.vendor == "sqlite":
        tmpdir = tempfile.mkdtemp(prefix="bench_upserts_")
        settings_dict["NAME"] = os.path.join(tmpdir, "bench.sqlite3")
    else:
        import psycopg

        name = f"bench_upserts_{os.getpid()}"
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
        from memory.active_save import use
        from memory.models import Save

        # The projections are save-scoped (issue 16): both ways write into one save.
        with use(Save.objects.create(name="bench-upserts", kind="scenario", era="v2")):
            run(n, repeat)
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
