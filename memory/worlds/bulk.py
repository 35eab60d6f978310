"""Writing a world in bulk, shared by every way in: INSERT … ON CONFLICT DO NOTHING, the
secondary indexes a large first import builds after its rows, the shard locks and the clock
that stamp imported rows in commit order, and making a world's objects exactly the input's.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from django.db import connection

from memory.active_save import among, scoped_cursor
from memory.engine.clock import now_us
from memory.engine.shards import ensure_shards
from memory.models import ObjectType, ProjectionShard


def insert_ignore(table: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> int:
    """INSERT … ON CONFLICT DO NOTHING (SQLite and PostgreSQL alike) into the active save;
    returns rows inserted."""
    if not rows:
        return 0
    names = ", ".join(columns)
    marks = ", ".join(["%s"] * len(columns))
    sql = (
        f"INSERT INTO {table} (game_save_id, {names}) VALUES (%(save)s, {marks}) "
        "ON CONFLICT DO NOTHING"
    )
    with scoped_cursor() as cursor:
        cursor.executemany(sql, rows)
        return max(cursor.rowcount, 0)


# A first import at least this large builds buffer_entries' secondary indexes after the rows
# are in (one sorted pass each) instead of maintaining five of them row by row, in the
# owner-interleaved order a game writes: the inserts dominate a million-row import.
BULK_INDEX_ROWS = 50_000


def secondary_indexes(table: str) -> list[tuple[str, str]]:
    """(name, CREATE statement) of the table's plain secondary indexes; never the primary key
    or a unique index, which the inserts' ON CONFLICT relies on."""
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute(
                "SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = %s "
                "AND sql IS NOT NULL ORDER BY name",
                [table],
            )
            found = cursor.fetchall()
            return [(n, sql) for n, sql in found if not sql.upper().startswith("CREATE UNIQUE")]
        cursor.execute(
            "SELECT i.relname, pg_get_indexdef(i.oid) FROM pg_index x "
            "JOIN pg_class i ON i.oid = x.indexrelid JOIN pg_class t ON t.oid = x.indrelid "
            "WHERE t.relname = %s AND t.relnamespace = to_regnamespace(current_schema()) "
            "AND NOT x.indisprimary AND NOT x.indisunique ORDER BY i.relname",
            [table],
        )
        return list(cursor.fetchall())


# The columns every door that lands omnia buffer and ledger rows writes (an import, a followed
# game), in the order its row tuples carry them.
BUFFER_COLUMNS = (
    "id",
    "owner_id",
    "timestamp",
    "location_id",
    "intent_json",
    "outcome_json",
    "pinned",
    "created_at",
    "shard",
    "untimed",
)
LEDGER_COLUMNS = (
    "id",
    "owner_id",
    "timestamp",
    "location_id",
    "content",
    "quotes_json",
    "importance",
    "embedding",
    "scope_id",
    "slug",
    "created_at",
)


@contextmanager
def indexes_built_after(table: str, incoming_rows: int) -> Iterator[bool]:
    """Inside the import's transaction: for a large import into an empty table, drop its
    secondary indexes, let the rows in, then create them again. Transactional DDL on both
    backends, so a failed import rolls the indexes back with the rows. On PostgreSQL the
    DROP locks the (empty) table against readers until the import commits; on SQLite (WAL)
    readers keep the old snapshot. Yields whether it did so."""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT 1 FROM {table} LIMIT 1")
        empty = cursor.fetchone() is None
    if incoming_rows < BULK_INDEX_ROWS or not empty:
        yield False
        return
    indexes = secondary_indexes(table)
    with connection.cursor() as cursor:
        for name, _sql in indexes:
            cursor.execute(f"DROP INDEX {connection.ops.quote_name(name)}")
    yield True
    with connection.cursor() as cursor:
        for _name, sql in indexes:
            cursor.execute(sql)


def lock_all_shards() -> dict[int, int]:
    """Hold every shard lock for the import, so imported write times stay in commit order."""
    ensure_shards()
    return {
        row.shard: row.last_assigned_at
        for row in ProjectionShard.objects.select_for_update().order_by("shard")
    }


def advance_shards(assigned: dict[int, int]) -> None:
    for shard, last in assigned.items():
        ProjectionShard.objects.filter(shard=shard, last_assigned_at__lt=last).update(
            last_assigned_at=last
        )


class ImportClock:
    """Hands out created_at values in input order, past every shard's last assignment."""

    def __init__(self, shard_marks: dict[int, int]) -> None:
        self.next = max([now_us(), *[mark + 1 for mark in shard_marks.values()]])
        self.assigned: dict[int, int] = {}

    def take(self, shard: int) -> int:
        value = self.next
        self.next += 1
        self.assigned[shard] = value
        return value


def sync_objects(
    object_rows: list[tuple], attribute_rows: list[tuple], acl_rows: list[tuple]
) -> dict[str, int]:
    """Upsert objects and make their attributes and ACLs exactly the file's.

    Each row's place in its input (the file's rowid order, or the scenario's order) is kept as
    `file_order`, so an export writes them back in the order the game wrote them; the same
    input gives the same values, so a re-import changes nothing."""
    counts = {"objects": 0, "attributes": 0, "attribute_acl": 0}
    object_ids = [row[0] for row in object_rows]
    # Worlds first: every other object points at one.
    ordered = sorted(enumerate(object_rows), key=lambda item: item[1][1] != ObjectType.WORLD)
    with scoped_cursor() as cursor:
        for position, row in ordered:
            cursor.execute(
                "UPDATE objects SET type=%s, world_id=%s, clock_iso=%s, location_id=%s, "
                "aliases_json=%s, connections_json=%s, is_agent=%s, file_order=%s "
                "WHERE game_save_id=%(save)s AND id=%s",
                [*row[1:], position, row[0]],
            )
            if cursor.rowcount == 0:
                cursor.execute(
                    "INSERT INTO objects (game_save_id, id, type, world_id, clock_iso, "
                    "location_id, aliases_json, connections_json, is_agent, file_order) "
                    "VALUES (%(save)s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
                    [*row, position],
                )
                counts["objects"] += 1
        for start in range(0, len(object_ids), 500):
            objects, params = among("object_id", object_ids[start : start + 500])
            for table in ("attribute_acl", "attributes"):
                cursor.execute(
                    f"DELETE FROM {table} WHERE game_save_id = %(save)s AND {objects}", params
                )
    insert_ignore(
        "attributes",
        ("object_id", "name", "value", "visibility", "file_order"),
        with_file_order(attribute_rows),
    )
    insert_ignore(
        "attribute_acl",
        ("object_id", "attribute_name", "entity_id", "file_order"),
        with_file_order(acl_rows),
    )
    counts["attributes"] = len(attribute_rows)
    counts["attribute_acl"] = len(acl_rows)
    return counts


def with_file_order(rows: Sequence[Sequence[Any]]) -> list[tuple]:
    """The rows, each with its place in the input appended (the `file_order` column)."""
    return [(*row, position) for position, row in enumerate(rows)]
