"""Faces of one viewer whose home and five layers hold N long-term entries (issue 4), as a ratio
to a plain listing of the same entries (one ordered SELECT of the same columns).

    .venv/bin/python bench/bench_faces.py --entries 100000        # the figure in bench/FACES.md
    .venv/bin/python bench/bench_faces.py --smoke                 # CI: seconds
    .venv/bin/python bench/bench_faces.py --database-url postgres://postgres@127.0.0.1:5432/x

The store is generated at run time (bulk insert) in a temporary SQLite file, or in the given
PostgreSQL database, whose public schema is dropped and recreated first. The measurement runs
in a child process so Django is configured against that database only.

Shape: 1/6 of the entries in the viewer's home, 1/6 in each of five layers. Every 10th layer
entry carries the name of a home entry (shadowing work), every 4th body tags an entity
(hydration work), every 50th home entry is withheld and every 100th is absorbed by a rollup
(supersession work).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

VIEWER = "bench-viewer"
LAYERS = 5
REPEATS = 5  # best of five: the figure is the code, not a noisy neighbour
COLUMNS = ("id", "scope_id", "slug", "name", "draft_name", "withheld", "content")


def populate(entries: int) -> None:
    from memory.models import (
        AbstractionEdge,
        Layer,
        LayerSubscription,
        LedgerEntry,
        WorldObject,
    )

    world = WorldObject.objects.create(id="bench-world", type="world")
    aliases = json.dumps([["bench-other", "the stranger"]], separators=(",", ":"))
    WorldObject.objects.create(id=VIEWER, type="entity", world_id=world.id, aliases_json=aliases)
    WorldObject.objects.create(id="bench-other", type="entity", world_id=world.id)
    for i in range(LAYERS):
        Layer.objects.create(id=f"bench-layer-{i}", world_id=world.id, title=f"Layer {i}")
        LayerSubscription.objects.create(entity_id=VIEWER, layer_id=f"bench-layer-{i}", position=i)
    per_scope = entries // (LAYERS + 1)
    home_count = entries - per_scope * LAYERS

    def body(n: int) -> str:
        if n % 4 == 0:
            return f"entity@bench-other[the chandler] told me fact number {n}."
        return f"Fact number {n}, remembered plainly."

    def rows():
        for n in range(home_count):
            yield LedgerEntry(
                id=f"h{n:07d}",
                owner_id=VIEWER,
                timestamp="2026-07-06T12:00:00.000Z",
                content=body(n),
                importance=5,
                scope_id=f"home:{VIEWER}",
                slug=f"home/fact-{n}",
                name=f"Fact {n}",
                withheld=n % 50 == 1,
                created_at=n,
            )
        for layer in range(LAYERS):
            for n in range(per_scope):
                # Every 10th layer entry shares a home entry's name; the rest are unique.
                name = f"Fact {n}" if n % 10 == 0 else f"Lore {layer}-{n}"
                yield LedgerEntry(
                    id=f"l{layer}-{n:07d}",
                    owner_id=None,
                    timestamp="2026-07-06T12:00:00.000Z",
                    content=body(n),
                    importance=5,
                    scope_id=f"layer:bench-layer-{layer}",
                    slug=f"lore{layer}/entry-{n}",
                    name=name,
                    created_at=n,
                )

    batch: list = []
    for row in rows():
        batch.append(row)
        if len(batch) == 5000:
            LedgerEntry.objects.bulk_create(batch)
            batch = []
    LedgerEntry.objects.bulk_create(batch)
    # Supersession: every 100th home entry absorbed by a rollup (the rollups are home entries
    # already counted above, so the total stays `entries`).
    AbstractionEdge.objects.bulk_create(
        AbstractionEdge(
            member_id=f"h{n:07d}",
            member_kind="ledger",
            rollup_id=f"h{n + 1:07d}",
            owner_id=VIEWER,
            created_at=n,
        )
        for n in range(0, home_count - 1, 100)
    )


def plain_listing(scopes: list[str]) -> int:
    """The floor: one ordered SELECT of the same columns, every row fetched (of the active
    save, as every reader of the inspector filters)."""
    from django.db import connection

    from memory.active_save import current_id

    marks = ", ".join(["%s"] * len(scopes))
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT {', '.join(COLUMNS)} FROM ledger_entries "
            f"WHERE game_save_id = %s AND scope_id IN ({marks}) ORDER BY scope_id, id",
            [current_id(), *scopes],
        )
        return len(cursor.fetchall())


def child(entries: int) -> dict:
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "omnia_site.settings")
    os.environ.setdefault("OMNIA_TESTING", "1")
    django.setup()
    from django.core.management import call_command

    from memory.active_save import activate
    from memory.engine.longterm.reader import viewer_faces
    from memory.models import Save

    call_command("migrate", verbosity=0)
    # Every row belongs to a save (issue 16): the generated store is one, active throughout.
    activate(Save.objects.create(name="bench-faces", kind="scenario", era="v2"))
    started = time.perf_counter()
    populate(entries)
    populate_s = time.perf_counter() - started
    scopes = [f"home:{VIEWER}", *(f"layer:bench-layer-{i}" for i in range(LAYERS))]

    plain_s, faces_s = [], []
    answer = None
    listed = 0
    for _ in range(REPEATS):
        started = time.perf_counter()
        listed = plain_listing(scopes)
        plain_s.append(time.perf_counter() - started)
        started = time.perf_counter()
        answer = viewer_faces(VIEWER)
        faces_s.append(time.perf_counter() - started)
    assert answer is not None
    return {
        "entries": entries,
        "populate_s": round(populate_s, 2),
        "plain_s": round(min(plain_s), 4),
        "faces_s": round(min(faces_s), 4),
        "time_ratio": round(min(faces_s) / min(plain_s), 2),
        "plain_rows": listed,
        "rows_visited": answer.rows_visited,
        "rows_ratio": round(answer.rows_visited / listed, 4),
        "default": len(answer.default),
        "shadowed": len(answer.shadowed),
        "superseded": len(answer.superseded),
        "withheld": len(answer.withheld),
        "undeliverable": len(answer.undeliverable),
    }


def _reset_postgres(url: str) -> None:
    import psycopg

    with psycopg.connect(url.replace("postgres://", "postgresql://"), autocommit=True) as conn:
        conn.execute("DROP SCHEMA public CASCADE")
        conn.execute("CREATE SCHEMA public")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--entries", type=int, default=100_000)
    parser.add_argument("--smoke", action="store_true", help="a tiny store, for CI")
    parser.add_argument("--database-url", help="use this PostgreSQL instead of a temp SQLite")
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        print(json.dumps(child(args.child)))
        return
    entries = 6_000 if args.smoke else args.entries
    with tempfile.TemporaryDirectory(prefix="omnia-bench-faces-") as tmp:
        url = args.database_url or f"sqlite:///{Path(tmp) / 'faces.sqlite3'}"
        if args.database_url:
            _reset_postgres(args.database_url)
        out = subprocess.run(
            [sys.executable, __file__, "--child", str(entries)],
            check=True,
            capture_output=True,
            text=True,
            cwd=ROOT,
            env={**os.environ, "DATABASE_URL": url},
        )
    result = json.loads(out.stdout.strip().splitlines()[-1])
    result["backend"] = "postgresql" if args.database_url else "sqlite"
    print(json.dumps(result))
    print(
        f"faces of one viewer over {result['entries']:,} entries ({result['backend']}): "
        f"{result['faces_s']} s vs plain listing {result['plain_s']} s -> time ratio "
        f"{result['time_ratio']}; rows_visited {result['rows_visited']:,} vs "
        f"{result['plain_rows']:,} -> rows ratio {result['rows_ratio']}"
    )


if __name__ == "__main__":
    main()
