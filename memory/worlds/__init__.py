"""Ways in: an omnia SQLite world file, an omnia scenario JSON, the bundled demo.

Every way in is atomic. The whole input is read and validated first (streaming, for the big
buffer table), rows are written in one transaction, and any bad row aborts everything with a
message naming the file, the table and the row. Re-importing the same file changes nothing.
"""

from __future__ import annotations

import hashlib
import json
import logging
import multiprocessing
import os
import sqlite3
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.db import connection, transaction

from memory.engine.aliases import AliasesJsonError, dump_aliases_json, parse_aliases_json
from memory.engine.clock import now_us
from memory.engine.errors import InvalidInput
from memory.engine.intents import IntentError, first_invalid_row, parse_intent, parse_outcome
from memory.engine.shards import ensure_shards, shard_count, shard_of
from memory.models import (
    LayerSubscription,
    ObjectType,
    ProjectionShard,
    WorldObject,
    WorldSource,
)

logger = logging.getLogger(__name__)

BATCH = 5000
OBJECT_TYPES = {t.value for t in ObjectType}
VISIBILITIES = {"PUBLIC", "PRIVATE"}


class WorldImportError(InvalidInput):
    """A refused way in, named by file, table and row. Nothing was written."""

    def __init__(self, source: str, table: str, row: str, problem: str) -> None:
        self.source, self.table, self.row, self.problem = source, table, row, problem
        super().__init__(f"{source}: table {table}, row {row}: {problem}", field=table)


@dataclass
class ImportReport:
    source: str
    era: str
    worlds: list[str]
    counts: dict[str, int] = field(default_factory=dict)  # rows inserted per table
    skipped: dict[str, int] = field(default_factory=dict)  # rows already present

    def summary(self) -> str:
        inserted = ", ".join(f"{table} {n}" for table, n in self.counts.items())
        skipped = sum(self.skipped.values())
        return (
            f"{self.source}: world {', '.join(self.worlds)} ({self.era}); inserted {inserted}"
            + (f"; {skipped} rows already present" if skipped else "")
        )


# --- shared writing helpers ---------------------------------------------------------------


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _insert_ignore(table: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> int:
    """INSERT … ON CONFLICT DO NOTHING (SQLite and PostgreSQL alike); returns rows inserted."""
    if not rows:
        return 0
    names = ", ".join(columns)
    marks = ", ".join(["%s"] * len(columns))
    sql = f"INSERT INTO {table} ({names}) VALUES ({marks}) ON CONFLICT DO NOTHING"
    with connection.cursor() as cursor:
        cursor.executemany(sql, rows)
        return max(cursor.rowcount, 0)


# A first import at least this large builds buffer_entries' secondary indexes after the rows
# are in (one sorted pass each) instead of maintaining five of them row by row, in the
# owner-interleaved order a game writes: the inserts dominate a million-row import.
BULK_INDEX_ROWS = 50_000


def _secondary_indexes(table: str) -> list[tuple[str, str]]:
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


@contextmanager
def _indexes_built_after(table: str, incoming_rows: int) -> Iterator[bool]:
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
    indexes = _secondary_indexes(table)
    with connection.cursor() as cursor:
        for name, _sql in indexes:
            cursor.execute(f"DROP INDEX {connection.ops.quote_name(name)}")
    yield True
    with connection.cursor() as cursor:
        for _name, sql in indexes:
            cursor.execute(sql)


def _lock_all_shards() -> dict[int, int]:
    """Hold every shard lock for the import, so imported write times stay in commit order."""
    ensure_shards()
    return {
        row.shard: row.last_assigned_at
        for row in ProjectionShard.objects.select_for_update().order_by("shard")
    }


def _advance_shards(assigned: dict[int, int]) -> None:
    for shard, last in assigned.items():
        ProjectionShard.objects.filter(shard=shard, last_assigned_at__lt=last).update(
            last_assigned_at=last
        )


class _Clock:
    """Hands out created_at values in input order, past every shard's last assignment."""

    def __init__(self, shard_marks: dict[int, int]) -> None:
        self.next = max([now_us(), *[mark + 1 for mark in shard_marks.values()]])
        self.assigned: dict[int, int] = {}

    def take(self, shard: int) -> int:
        value = self.next
        self.next += 1
        self.assigned[shard] = value
        return value


def _check_world_ownership(source: str, objects: dict[str, str | None]) -> None:
    """Refuse an object id that already belongs to another world in this database."""
    ids = list(objects)
    for start in range(0, len(ids), 500):
        chunk = ids[start : start + 500]
        found = {o.id: o for o in WorldObject.objects.filter(pk__in=chunk).only("id", "type", "world_id")}
        # In input order, so the message names the first offending row of the file.
        for existing in (found[i] for i in chunk if i in found):
            incoming_world = objects[existing.id]
            if existing.world_id_or_self != incoming_world:
                raise WorldImportError(
                    source,
                    "objects",
                    f"id={existing.id}",
                    f"id already belongs to world {existing.world_id_or_self!r} in the inspector",
                )


def _sync_objects(object_rows: list[tuple], attribute_rows: list[tuple], acl_rows: list[tuple]) -> dict[str, int]:
    """Upsert objects and make their attributes and ACLs exactly the file's."""
    counts = {"objects": 0, "attributes": 0, "attribute_acl": 0}
    object_ids = [row[0] for row in object_rows]
    # Worlds first: every other object points at one.
    ordered = sorted(object_rows, key=lambda row: row[1] != ObjectType.WORLD)
    with connection.cursor() as cursor:
        for row in ordered:
            cursor.execute(
                "UPDATE objects SET type=%s, world_id=%s, clock_iso=%s, location_id=%s, "
                "aliases_json=%s, connections_json=%s, is_agent=%s WHERE id=%s",
                [*row[1:], row[0]],
            )
            if cursor.rowcount == 0:
                cursor.execute(
                    "INSERT INTO objects (id, type, world_id, clock_iso, location_id, aliases_json, "
                    "connections_json, is_agent) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
                    list(row),
                )
                counts["objects"] += 1
        for start in range(0, len(object_ids), 500):
            chunk = object_ids[start : start + 500]
            marks = ", ".join(["%s"] * len(chunk))
            cursor.execute(f"DELETE FROM attribute_acl WHERE object_id IN ({marks})", chunk)
            cursor.execute(f"DELETE FROM attributes WHERE object_id IN ({marks})", chunk)
    _insert_ignore("attributes", ("object_id", "name", "value", "visibility"), attribute_rows)
    _insert_ignore("attribute_acl", ("object_id", "attribute_name", "entity_id"), acl_rows)
    counts["attributes"] = len(attribute_rows)
    counts["attribute_acl"] = len(acl_rows)
    return counts


def _record_source(world_ids: Iterable[str], era: str, kind: str, path: str, sha: str, name: str = "") -> None:
    for world_id in world_ids:
        existing = WorldSource.objects.filter(world_id=world_id).first()
        if existing and (existing.source_sha256, existing.era) == (sha, era):
            continue  # the same input again: a re-import changes nothing, not even this row
        WorldSource.objects.update_or_create(
            world_id=world_id,
            defaults={"era": era, "kind": kind, "source_path": path, "source_sha256": sha, "name": name},
        )


class _BatchValidator:
    """Validates an import's rows batch by batch, reporting the first invalid row in file
    order. For a large import it runs in a second process (pydantic holds the GIL): batch k
    is validated there while this process inserts it, and the transaction is not committed
    until every batch has come back clean. A small import validates inline."""

    MAX_PENDING = 4  # batches in flight: bounds memory, keeps the pipe full

    def __init__(self, source: str, table: str, parallel: bool) -> None:
        self.source, self.table = source, table
        self.pending: deque[tuple[list, Future]] = deque()
        self.pool: ProcessPoolExecutor | None = None
        self.broken = False
        if parallel and (os.cpu_count() or 1) > 1:
            # spawn, not fork: the child must not inherit this process's open database
            # connection; it imports only memory.engine.intents (pydantic, no Django).
            self.pool = ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn"))

    def submit(self, rows: list[tuple[str, str, str | None]]) -> None:
        if self.pool is None or self.broken:
            self.finish()  # earlier batches first: file order
            self._check(rows, first_invalid_row(rows))
            return
        try:
            future = self.pool.submit(first_invalid_row, rows)
        except BrokenProcessPool:
            self.broken = True
            self.submit(rows)
            return
        self.pending.append((rows, future))
        while len(self.pending) > self.MAX_PENDING:
            self._settle_oldest()

    def before_error_at(self, rows_before: list[tuple[str, str, str | None]]) -> None:
        """Called before refusing a row for its structure: an invalid row earlier in the file
        is the one to report."""
        self.finish()
        self._check(rows_before, first_invalid_row(rows_before))

    def finish(self) -> None:
        while self.pending:
            self._settle_oldest()

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown(wait=True, cancel_futures=True)

    def _settle_oldest(self) -> None:
        rows, future = self.pending.popleft()
        try:
            found = future.result()
        except BrokenProcessPool:
            # The helper could not run (e.g. an unguarded __main__ that spawn re-imports):
            # validate here instead. Slower, never wrong.
            if not self.broken:
                logger.warning("import validator process failed; validating in-process")
            self.broken = True
            found = first_invalid_row(rows)
        self._check(rows, found)

    def _check(self, rows: list[tuple[str, str, str | None]], found: tuple[int, str] | None) -> None:
        if found is not None:
            raise WorldImportError(self.source, self.table, f"id={rows[found[0]][0]}", found[1])


# --- omnia SQLite world files ---------------------------------------------------------------


def _open_omnia(path: Path) -> sqlite3.Connection:
    source = str(path)
    if not path.is_file():
        raise WorldImportError(source, "-", "-", "no such file")
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    except sqlite3.DatabaseError as exc:
        raise WorldImportError(source, "-", "-", f"not an omnia SQLite world ({exc})") from None
    missing = {"objects", "attributes", "attribute_acl", "buffer_entries"} - tables
    if missing:
        conn.close()
        raise WorldImportError(
            source, ", ".join(sorted(missing)), "-", "table missing: not an omnia world file"
        )
    return conn


def _columns(conn: sqlite3.Connection, table: str) -> set[str]:
    return {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}


def _read_omnia_objects(conn: sqlite3.Connection, source: str) -> tuple[list[tuple], dict[str, str]]:
    cols = _columns(conn, "objects")
    extra = [c if c in cols else "NULL" for c in ("connections_json", "is_agent")]
    rows = conn.execute(
        "SELECT id, type, world_id, clock_iso, location_id, aliases_json, "
        f"{extra[0]}, {extra[1]} FROM objects ORDER BY rowid"
    ).fetchall()
    worlds: dict[str, str] = {}
    for row in rows:
        object_id, type_, world_id = row[0], row[1], row[2]
        where = f"id={object_id}"
        if not isinstance(object_id, str) or not object_id:
            raise WorldImportError(source, "objects", where, "id must be non-empty text")
        if type_ not in OBJECT_TYPES:
            raise WorldImportError(source, "objects", where, f"unknown object type {type_!r}")
        try:
            parse_aliases_json(row[5])
        except AliasesJsonError as exc:
            raise WorldImportError(source, "objects", where, f"aliases_json: {exc}") from None
        if row[6] is not None:
            try:
                json.loads(row[6])
            except (TypeError, ValueError):
                raise WorldImportError(source, "objects", where, "connections_json is not JSON") from None
        worlds[object_id] = object_id if type_ == ObjectType.WORLD else (world_id or object_id)
    ids = set(worlds)
    for row in rows:
        if row[2] is not None and row[2] not in ids:
            raise WorldImportError(source, "objects", f"id={row[0]}", f"world_id {row[2]!r} is not in the file")
    return rows, worlds


def import_omnia(path: str | Path, *, progress: Callable[[int], None] | None = None) -> ImportReport:
    """Read an omnia SQLite world file (either era) into the inspector's database."""
    path = Path(path)
    source = str(path)
    conn = _open_omnia(path)
    try:
        return _import_omnia(conn, path, source, progress)
    except sqlite3.DatabaseError as exc:
        raise WorldImportError(source, "-", "-", f"unreadable SQLite file ({exc})") from None
    finally:
        conn.close()


def _import_omnia(conn: sqlite3.Connection, path: Path, source: str, progress) -> ImportReport:
    tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    buffer_cols = _columns(conn, "buffer_entries")
    has_ledger = "ledger_entries" in tables
    era = "v2" if ("pinned" in buffer_cols or has_ledger) else "v1"

    object_rows, worlds = _read_omnia_objects(conn, source)
    object_ids = set(worlds)
    attribute_rows = []
    for row in conn.execute("SELECT object_id, name, value, visibility FROM attributes ORDER BY rowid"):
        where = f"object_id={row[0]}, name={row[1]}"
        if row[0] not in object_ids:
            raise WorldImportError(source, "attributes", where, f"object {row[0]!r} is not in the file")
        if row[3] not in VISIBILITIES:
            raise WorldImportError(source, "attributes", where, f"visibility {row[3]!r} is not PUBLIC or PRIVATE")
        if not isinstance(row[2], str):
            raise WorldImportError(source, "attributes", where, "value must be text")
        attribute_rows.append(tuple(row))
    attribute_keys = {(row[0], row[1]) for row in attribute_rows}
    acl_rows = []
    for row in conn.execute("SELECT object_id, attribute_name, entity_id FROM attribute_acl ORDER BY rowid"):
        if (row[0], row[1]) not in attribute_keys:
            raise WorldImportError(
                source, "attribute_acl", f"object_id={row[0]}, attribute_name={row[1]}, entity_id={row[2]}",
                "refers to an attribute that is not in the file",
            )
        acl_rows.append(tuple(row))

    sha = _sha256(path)
    world_ids = sorted(set(worlds.values()))
    report = ImportReport(source=source, era=era, worlds=world_ids)
    pinned_col = "pinned" if "pinned" in buffer_cols else "0"
    shards = shard_count()

    with transaction.atomic():
        marks = _lock_all_shards()
        _check_world_ownership(source, worlds)
        report.counts.update(_sync_objects(object_rows, attribute_rows, acl_rows))
        clock = _Clock(marks)
        inserted = seen = 0
        cursor = conn.execute(
            "SELECT id, owner_id, timestamp, location_id, intent_json, outcome_json, "
            f"{pinned_col} FROM buffer_entries ORDER BY rowid"
        )
        incoming = conn.execute("SELECT COUNT(*) FROM buffer_entries").fetchone()[0]
        shard_by_owner: dict[str, int] = {}  # a handful of owners, a million rows
        validator = _BatchValidator(source, "buffer_entries", parallel=incoming >= BULK_INDEX_ROWS)
        try:
            with _indexes_built_after("buffer_entries", incoming):
                while batch := cursor.fetchmany(BATCH):
                    checks: list[tuple[str, str, str | None]] = []
                    rows = []
                    for entry_id, owner_id, timestamp, location_id, intent_json, outcome_json, pinned in batch:
                        problem = None
                        if owner_id not in object_ids:
                            problem = f"owner {owner_id!r} is not an object in the file"
                        elif not isinstance(timestamp, str) or not timestamp:
                            problem = "timestamp must be non-empty text"
                        elif not isinstance(intent_json, str):
                            problem = "intent_json must be text"
                        if problem is not None:
                            validator.before_error_at(checks)
                            raise WorldImportError(source, "buffer_entries", f"id={entry_id}", problem)
                        checks.append((entry_id, intent_json, outcome_json))
                        shard = shard_by_owner.get(owner_id)
                        if shard is None:
                            shard = shard_by_owner[owner_id] = shard_of(owner_id, shards)
                        rows.append(
                            (entry_id, owner_id, timestamp, location_id, intent_json, outcome_json,
                             pinned, clock.take(shard), shard)
                        )
                    validator.submit(checks)  # validated there while inserted here
                    inserted += _insert_ignore(
                        "buffer_entries",
                        ("id", "owner_id", "timestamp", "location_id", "intent_json", "outcome_json",
                         "pinned", "created_at", "shard"),
                        rows,
                    )
                    seen += len(rows)
                    if progress:
                        progress(len(rows))
                validator.finish()  # every batch clean before the indexes and the commit
        finally:
            validator.close()
        if seen != inserted:
            _check_conflicting_ids(source, "buffer_entries", conn, worlds)
        report.counts["buffer_entries"] = inserted
        report.skipped["buffer_entries"] = seen - inserted
        if has_ledger:
            _import_ledger(conn, source, object_ids, clock, report, worlds)
        _advance_shards(clock.assigned)
        _record_source(world_ids, era, "sqlite", source, sha)
    return report


def _check_conflicting_ids(source: str, table: str, conn: sqlite3.Connection, worlds: dict[str, str]) -> None:
    """Rows skipped on conflict must be this world's own rows (a re-import), never another's."""
    owner_col = "owner_id"
    cursor = conn.execute(f"SELECT id, {owner_col} FROM {table} ORDER BY rowid")
    while batch := cursor.fetchmany(BATCH):
        by_id = {row[0]: row[1] for row in batch}
        marks = ", ".join(["%s"] * len(by_id))
        with connection.cursor() as db:
            db.execute(f"SELECT id, {owner_col} FROM {table} WHERE id IN ({marks})", list(by_id))
            for entry_id, existing_owner in db.fetchall():
                if existing_owner != by_id[entry_id] and (
                    existing_owner is None or worlds.get(by_id[entry_id]) != _world_of(existing_owner)
                ):
                    raise WorldImportError(
                        source, table, f"id={entry_id}",
                        f"id already belongs to {existing_owner!r} of another world in the inspector",
                    )


def _world_of(object_id: str) -> str | None:
    obj = WorldObject.objects.filter(pk=object_id).only("id", "type", "world_id").first()
    return obj.world_id_or_self if obj else None


def _import_ledger(conn, source, object_ids, clock: _Clock, report: ImportReport, worlds) -> None:
    rows = []
    for entry_id, owner_id, timestamp, location_id, content, quotes_json, importance, embedding in conn.execute(
        "SELECT id, owner_id, timestamp, location_id, content, quotes_json, importance, embedding "
        "FROM ledger_entries ORDER BY rowid"
    ):
        where = f"id={entry_id}"
        if owner_id not in object_ids:
            raise WorldImportError(source, "ledger_entries", where, f"owner {owner_id!r} is not an object in the file")
        if not isinstance(content, str):
            raise WorldImportError(source, "ledger_entries", where, "content must be text")
        if not isinstance(importance, int) or not 1 <= importance <= 10:
            raise WorldImportError(source, "ledger_entries", where, f"importance {importance!r} is not 1–10")
        if quotes_json is not None:
            try:
                json.loads(quotes_json)
            except ValueError:
                raise WorldImportError(source, "ledger_entries", where, "quotes_json is not JSON") from None
        rows.append(
            (entry_id, owner_id, timestamp, location_id, content, quotes_json, importance,
             embedding, f"home:{owner_id}", f"ledger/{entry_id}", clock.take(shard_of(owner_id)))
        )
    inserted = _insert_ignore(
        "ledger_entries",
        ("id", "owner_id", "timestamp", "location_id", "content", "quotes_json", "importance",
         "embedding", "scope_id", "slug", "created_at"),
        rows,
    )
    if inserted != len(rows):
        _check_conflicting_ids(source, "ledger_entries", conn, worlds)
    ledger_ids = {row[0] for row in rows}
    involved = []
    for entry_id, entity_id in conn.execute(
        "SELECT entry_id, entity_id FROM ledger_involved_entities ORDER BY rowid"
    ):
        if entry_id not in ledger_ids:
            raise WorldImportError(
                source, "ledger_involved_entities", f"entry_id={entry_id}, entity_id={entity_id}",
                "refers to a ledger entry that is not in the file",
            )
        involved.append((entry_id, entity_id))
    report.counts["ledger_entries"] = inserted
    report.skipped["ledger_entries"] = len(rows) - inserted
    report.counts["ledger_involved_entities"] = _insert_ignore(
        "ledger_involved_entities", ("entry_id", "entity_id"), involved
    )


# --- omnia scenario JSON -------------------------------------------------------------------


def _js_json(value: Any) -> str:
    """JSON as JavaScript's JSON.stringify writes it: no spaces, non-ASCII kept."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


class _Scenario:
    """Validates a scenario document and turns it into rows; raises on the first bad one."""

    def __init__(self, doc: Any, source: str) -> None:
        self.source = source
        if not isinstance(doc, dict):
            self.fail("scenario", "-", "the document must be a JSON object")
        self.doc = doc
        self.objects: list[tuple] = []
        self.attributes: list[tuple] = []
        self.acl: list[tuple] = []
        self.memories: list[tuple] = []  # (id, owner, timestamp, location, intent_json, outcome_json, conversation)
        self.layers: list[tuple[str, str]] = []
        self.entries: list[dict[str, Any]] = []  # long-term entries with scope/owner
        self.subscriptions: list[tuple[str, str, int]] = []
        self.abstractions: list[dict[str, Any]] = []
        self.ids: dict[str, str] = {}  # object id -> where it was declared

    def fail(self, table: str, row: str, problem: str) -> None:
        raise WorldImportError(self.source, table, row, problem)

    def text(self, obj: dict, key: str, table: str, row: str, *, required: bool = True) -> str | None:
        value = obj.get(key)
        if value is None and not required:
            return None
        if not isinstance(value, str) or (required and not value):
            self.fail(table, row, f"{key!r} must be a non-empty string")
        return value

    def declare(self, object_id: str, where: str, table: str) -> None:
        if object_id in self.ids:
            self.fail(table, where, f"duplicate id {object_id!r} (first declared at {self.ids[object_id]})")
        self.ids[object_id] = where

    def add_attributes(self, object_id: str, attrs: Any, table: str, where: str) -> None:
        if attrs is None:
            return
        if not isinstance(attrs, list):
            self.fail(table, where, "'attributes' must be a list")
        names = set()
        for i, attr in enumerate(attrs):
            at = f"{where}.attributes[{i}]"
            if not isinstance(attr, dict):
                self.fail(table, at, "an attribute must be an object")
            name = self.text(attr, "name", table, at)
            value = attr.get("value")
            if not isinstance(value, str | int | float | bool):
                self.fail(table, at, "'value' must be a string")
            visibility = attr.get("visibility", "PUBLIC")
            if visibility not in VISIBILITIES:
                self.fail(table, at, f"visibility {visibility!r} is not PUBLIC or PRIVATE")
            if name in names:
                self.fail(table, at, f"duplicate attribute {name!r}")
            names.add(name)
            self.attributes.append((object_id, name, str(value), visibility))
            for entity_id in attr.get("allowedEntities") or []:
                if not isinstance(entity_id, str):
                    self.fail(table, at, "allowedEntities must be a list of ids")
                self.acl.append((object_id, name, entity_id))

    def entry(self, raw: Any, scope: str, owner: str | None, where: str) -> None:
        if not isinstance(raw, dict):
            self.fail("ledger_entries", where, "an entry must be an object")
        entry_id = self.text(raw, "id", "ledger_entries", where)
        slug = self.text(raw, "slug", "ledger_entries", where)
        body = raw.get("body")
        if not isinstance(body, str):
            self.fail("ledger_entries", where, "'body' must be a string")
        importance = raw.get("importance", 5)
        if not isinstance(importance, int) or not 1 <= importance <= 10:
            self.fail("ledger_entries", where, "'importance' must be an integer 1–10")
        self.declare(entry_id, where, "ledger_entries")
        self.entries.append(
            {
                "id": entry_id, "owner": owner, "scope": scope, "slug": slug, "body": body,
                "name": self.text(raw, "name", "ledger_entries", where, required=False),
                "draft_name": self.text(raw, "draft_name", "ledger_entries", where, required=False),
                "withheld": bool(raw.get("withheld", False)), "importance": importance,
                "timestamp": raw.get("timestamp") or self.doc.get("startTime") or "",
            }
        )

    def parse(self) -> None:
        doc = self.doc
        world_id = self.text(doc, "id", "scenario", "id")
        start = self.text(doc, "startTime", "scenario", "startTime")
        self.world_id = world_id
        self.declare(world_id, "id", "objects")
        self.objects.append((world_id, "world", None, start, None, None, None, None))
        for key in ("name", "description"):
            if isinstance(doc.get(key), str):
                self.attributes.append((world_id, key, doc[key], "PRIVATE"))
        self.add_attributes(world_id, (doc.get("world") or {}).get("attributes"), "objects", "world")

        locations = doc.get("locations") or []
        if not isinstance(locations, list):
            self.fail("objects", "locations", "'locations' must be a list")
        for i, loc in enumerate(locations):
            where = f"locations[{i}]"
            if not isinstance(loc, dict):
                self.fail("objects", where, "a location must be an object")
            loc_id = self.text(loc, "id", "objects", where)
            self.declare(loc_id, where, "objects")
            connections = loc.get("connections")
            self.objects.append(
                (loc_id, "location", world_id, None, loc.get("parentId"), None,
                 _js_json(connections) if connections is not None else None, None)
            )
            self.add_attributes(loc_id, loc.get("attributes"), "objects", where)

        entities = doc.get("entities")
        if not isinstance(entities, list):
            self.fail("objects", "entities", "'entities' must be a list")
        for layer_i, layer in enumerate(doc.get("layers") or []):
            where = f"layers[{layer_i}]"
            if not isinstance(layer, dict):
                self.fail("memory_layers", where, "a layer must be an object")
            layer_id = self.text(layer, "id", "memory_layers", where)
            if any(existing == layer_id for existing, _ in self.layers):
                self.fail("memory_layers", where, f"duplicate layer id {layer_id!r}")
            self.layers.append((layer_id, str(layer.get("title") or layer_id)))
            for j, raw in enumerate(layer.get("entries") or []):
                self.entry(raw, f"layer:{layer_id}", None, f"{where}.entries[{j}]")
        layer_ids = {layer_id for layer_id, _ in self.layers}

        for i, ent in enumerate(entities):
            where = f"entities[{i}]"
            if not isinstance(ent, dict):
                self.fail("objects", where, "an entity must be an object")
            ent_id = self.text(ent, "id", "objects", where)
            self.declare(ent_id, where, "objects")
            aliases = ent.get("aliases") or {}
            try:
                alias_map = parse_aliases_json(_js_json(aliases))
            except AliasesJsonError as exc:
                self.fail("objects", where, f"aliases: {exc}")
            is_agent = ent.get("isAgent", ent.get("is_agent", True))
            self.objects.append(
                (ent_id, "entity", world_id, None, ent.get("locationId"), dump_aliases_json(alias_map),
                 None, 1 if is_agent else 0)
            )
            self.add_attributes(ent_id, ent.get("attributes"), "objects", where)
            for j, mem in enumerate(ent.get("initialMemories") or []):
                at = f"{where}.initialMemories[{j}]"
                if not isinstance(mem, dict):
                    self.fail("buffer_entries", at, "a memory must be an object")
                mem_id = self.text(mem, "id", "buffer_entries", at)
                self.declare(mem_id, at, "buffer_entries")
                intent = mem.get("intent")
                try:
                    parse_intent(intent if isinstance(intent, dict) else _js_json(intent))
                    outcome = mem.get("outcome")
                    if outcome is not None:
                        parse_outcome(outcome)
                except IntentError as exc:
                    self.fail("buffer_entries", f"{at} (id={mem_id})", str(exc))
                self.memories.append(
                    (mem_id, ent_id, self.text(mem, "timestamp", "buffer_entries", at),
                     mem.get("locationId"), _js_json(intent),
                     _js_json(outcome) if outcome is not None else None,
                     mem.get("conversationId"))
                )
            for position, layer_id in enumerate(ent.get("layers") or []):
                if layer_id not in layer_ids:
                    self.fail("memory_layer_subscriptions", f"{where}.layers[{position}]", f"unknown layer {layer_id!r}")
                self.subscriptions.append((ent_id, layer_id, position))
            for j, raw in enumerate(ent.get("memories") or []):
                self.entry(raw, f"home:{ent_id}", ent_id, f"{where}.memories[{j}]")

        for i, raw in enumerate(doc.get("abstractions") or []):
            where = f"abstractions[{i}]"
            if not isinstance(raw, dict):
                self.fail("memory_abstraction_edges", where, "an abstraction must be an object")
            for key in ("id", "owner", "name", "body"):
                self.text(raw, key, "memory_abstraction_edges", where)
            members = raw.get("members")
            if not isinstance(members, list) or not members:
                self.fail("memory_abstraction_edges", where, "'members' must be a non-empty list of ids")
            self.abstractions.append(raw)

        entity_ids = {row[0] for row in self.objects if row[1] == "entity"}
        attribute_keys = {(a[0], a[1]) for a in self.attributes}
        for object_id, name, _entity in self.acl:
            if (object_id, name) not in attribute_keys:
                self.fail("attribute_acl", f"{object_id}.{name}", "refers to an unknown attribute")
        for mem in self.memories:
            if mem[1] not in entity_ids:
                self.fail("buffer_entries", f"id={mem[0]}", f"owner {mem[1]!r} is not an entity")


def load_world(path_or_doc: str | Path | dict, *, source: str | None = None) -> ImportReport:
    """Load an omnia scenario JSON (plus our optional layers/memories/abstractions)."""
    if isinstance(path_or_doc, dict):
        doc, source = path_or_doc, source or "<scenario>"
        sha = hashlib.sha256(_js_json(doc).encode()).hexdigest()
    else:
        path = Path(path_or_doc)
        source = source or str(path)
        try:
            raw = path.read_bytes()
        except OSError as exc:
            raise WorldImportError(source, "-", "-", f"cannot read file ({exc.strerror})") from None
        try:
            doc = json.loads(raw)
        except (ValueError, UnicodeDecodeError) as exc:
            raise WorldImportError(source, "scenario", "-", f"not JSON ({exc})") from None
        sha = hashlib.sha256(raw).hexdigest()
    scenario = _Scenario(doc, source)
    scenario.parse()
    era = "v2" if any('"content"' in mem[4] for mem in scenario.memories) else "v1"
    report = ImportReport(source=source, era=era, worlds=[scenario.world_id])
    world_of = dict.fromkeys((row[0] for row in scenario.objects), scenario.world_id)
    from memory.models import Layer, LedgerEntry  # local: keeps the module's import list short

    with transaction.atomic():
        marks = _lock_all_shards()
        _check_world_ownership(source, world_of)
        report.counts.update(_sync_objects(scenario.objects, scenario.attributes, scenario.acl))
        clock = _Clock(marks)
        rows = []
        for mem_id, owner, timestamp, location, intent_json, outcome_json, conversation in scenario.memories:
            shard = shard_of(owner)
            rows.append((mem_id, owner, timestamp, location, intent_json, outcome_json, 0,
                         clock.take(shard), shard, conversation))
        inserted = _insert_ignore(
            "buffer_entries",
            ("id", "owner_id", "timestamp", "location_id", "intent_json", "outcome_json", "pinned",
             "created_at", "shard", "conversation_id"),
            rows,
        )
        if inserted != len(rows):
            _check_scenario_conflicts(source, "buffer_entries", [(r[0], r[1]) for r in rows], world_of)
        report.counts["buffer_entries"] = inserted
        report.skipped["buffer_entries"] = len(rows) - inserted
        for layer_id, title in scenario.layers:
            Layer.objects.update_or_create(id=layer_id, defaults={"world_id": scenario.world_id, "title": title})
        entry_rows = [
            (e["id"], e["owner"], e["timestamp"], None, e["body"], None, e["importance"], None,
             e["scope"], e["slug"], e["name"], e["draft_name"], e["withheld"],
             clock.take(shard_of(e["owner"] or e["scope"])))
            for e in scenario.entries
        ]
        entries_inserted = _insert_ignore(
            "ledger_entries",
            ("id", "owner_id", "timestamp", "location_id", "content", "quotes_json", "importance",
             "embedding", "scope_id", "slug", "name", "draft_name", "withheld", "created_at"),
            entry_rows,
        )
        if entries_inserted != len(entry_rows):
            existing = LedgerEntry.objects.filter(pk__in=[e["id"] for e in scenario.entries])
            wanted = {e["id"]: e["scope"] for e in scenario.entries}
            for entry in existing:
                if entry.scope_id != wanted[entry.id]:
                    raise WorldImportError(source, "ledger_entries", f"id={entry.id}", "id already belongs to another scope")
        report.counts["ledger_entries"] = entries_inserted
        entity_ids = [row[0] for row in scenario.objects if row[1] == "entity"]
        LayerSubscription.objects.filter(entity_id__in=entity_ids).delete()
        LayerSubscription.objects.bulk_create(
            LayerSubscription(entity_id=e, layer_id=layer, position=pos) for e, layer, pos in scenario.subscriptions
        )
        _advance_shards(clock.assigned)
        report.counts["abstractions"] = _land_abstractions(source, scenario.abstractions)
        _record_source([scenario.world_id], era, "scenario", source, sha, str(doc.get("name") or ""))
    return report


def _check_scenario_conflicts(source: str, table: str, rows: list[tuple[str, str]], world_of: dict[str, str]) -> None:
    wanted = dict(rows)
    ids = list(wanted)
    for start in range(0, len(ids), 500):
        chunk = ids[start : start + 500]
        marks = ", ".join(["%s"] * len(chunk))
        with connection.cursor() as db:
            db.execute(f"SELECT id, owner_id FROM {table} WHERE id IN ({marks})", chunk)
            for entry_id, owner in db.fetchall():
                if owner != wanted[entry_id]:
                    raise WorldImportError(source, table, f"id={entry_id}", f"id already belongs to {owner!r}")


def _land_abstractions(source: str, abstractions: list[dict[str, Any]]) -> int:
    if not abstractions:
        return 0
    from memory.engine.abstract import AbstractConflict, abstract
    from memory.engine.shards import generation_of
    from memory.models import LedgerEntry

    landed = 0
    for i, raw in enumerate(abstractions):
        if LedgerEntry.objects.filter(pk=raw["id"]).exists():
            continue  # a re-load: this rollup already landed
        try:
            abstract(
                raw["owner"], list(raw["members"]), name=raw["name"], body=raw["body"],
                slug=raw.get("slug"), rollup_id=raw["id"], expected_generation=generation_of(raw["owner"]),
            )
        except (AbstractConflict, ValueError) as exc:
            raise WorldImportError(source, "memory_abstraction_edges", f"abstractions[{i}] (id={raw['id']})", str(exc)) from None
        landed += 1
    return landed


DEMO_PATH = Path(__file__).resolve().parents[1] / "demo" / "demo_world.json"


def load_demo() -> ImportReport:
    return load_world(DEMO_PATH, source="demo_world.json")

