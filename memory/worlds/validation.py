"""What an imported row must be, and the validator that checks an import's buffer rows batch
by batch, in a second process when the import is large.

The second process is spawned, not forked, and runs only `memory.engine.intents.first_invalid_row`
(pydantic, no Django): it imports nothing of the inspector's database layer.
"""

from __future__ import annotations

import json
import logging
import multiprocessing
import os
import sqlite3
from collections import deque
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

from memory.engine.intents import first_invalid_row
from memory.engine.lifetime import die_with_parent
from memory.engine.strict_json import json_text_problem, text_problem
from memory.engine.visibility import PRIVATE, PUBLIC
from memory.models import ObjectType
from memory.worlds.report import WorldImportError

logger = logging.getLogger(__name__)

OBJECT_TYPES = {t.value for t in ObjectType}
VISIBILITIES = {PUBLIC, PRIVATE}
INT32 = 2**31 - 1  # omnia's INTEGER columns are PostgreSQL integers here: 32 bits

# The columns an omnia world file of either era has (later omnia adds, never removes).
COLUMNS = {
    "objects": ("id", "type", "world_id", "clock_iso", "location_id", "aliases_json"),
    "attributes": ("object_id", "name", "value", "visibility"),
    "attribute_acl": ("object_id", "attribute_name", "entity_id"),
    "buffer_entries": (
        "id",
        "owner_id",
        "timestamp",
        "location_id",
        "intent_json",
        "outcome_json",
    ),
    "ledger_entries": (
        "id",
        "owner_id",
        "timestamp",
        "location_id",
        "content",
        "quotes_json",
        "importance",
        "embedding",
    ),
    "ledger_involved_entities": ("entry_id", "entity_id"),
}


def row_label(row_id: object) -> str:
    return (
        "id=NULL"
        if row_id is None
        else f"id={row_id!r}"
        if "\x00" in str(row_id)
        else f"id={row_id}"
    )


def text_field_problem(name: str, value: object, *, required: bool = False) -> str | None:
    """Why a text column's value is refused: SQLite lets any column hold any type (a BLOB
    aliases_json would be stored as \\x5b… on PostgreSQL), NULL where omnia's schema says
    NOT NULL, NUL, which PostgreSQL cannot store."""
    if value is None:
        return f"{name} must not be NULL" if required else None
    if not isinstance(value, str):
        kind = "a BLOB" if isinstance(value, bytes) else f"a number ({value!r})"
        return f"{name} must be text, not {kind}"
    if required and not value:
        return f"{name} must not be empty"
    problem = text_problem(value)
    return f"{name} {problem}" if problem else None


def integer_problem(
    name: str, value: object, low: int, high: int, *, required: bool = False
) -> str | None:
    if value is None:
        return f"{name} must not be NULL" if required else None
    if type(value) is not int:
        return f"{name} must be an integer, not {value!r}"
    if not low <= value <= high:
        return f"{name} {value} is not {low}–{high}"
    return None


def ledger_row_problem(
    row: tuple[object, ...], object_ids: set[str] | frozenset[str]
) -> str | None:
    """What is wrong with one omnia `ledger_entries` row (id, owner_id, timestamp,
    location_id, content, quotes_json, importance, embedding), or None: the one check of
    every door that reads the ledger (an import, a followed game)."""
    entry_id, owner_id, timestamp, location_id, content, quotes, importance, embedding = row
    problem = (
        text_field_problem("id", entry_id, required=True)
        or (
            f"owner {owner_id!r} is not an object in the file"
            if owner_id not in object_ids
            else None
        )
        or text_field_problem("timestamp", timestamp, required=True)
        or text_field_problem("location_id", location_id)
        or text_field_problem("content", content, required=True)
        or text_field_problem("quotes_json", quotes)
        or integer_problem("importance", importance, 1, 10, required=True)
        or (
            "embedding must be a BLOB or NULL"
            if embedding is not None and not isinstance(embedding, bytes)
            else None
        )
    )
    if problem is None and quotes is not None:
        problem = json_text_problem(quotes)
        if problem is not None:
            return f"quotes_json: {problem}"
        try:
            json.loads(quotes)
        except ValueError:
            return "quotes_json is not JSON"
    return problem


def check_columns(conn: sqlite3.Connection, source: str, tables: set[str]) -> None:
    """Refuse a file whose tables lack a column omnia always writes, naming table and column."""
    for table, wanted in COLUMNS.items():
        if table not in tables:
            continue
        have = {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}
        missing = [c for c in wanted if c not in have]
        if missing:
            raise WorldImportError(
                source,
                table,
                "(every row)",
                f"column {', '.join(missing)} missing: not an omnia world file",
            )


def first_duplicate(conn: sqlite3.Connection, table: str) -> object | None:
    """The first id held by two rows of a table, or None. omnia declares `id` the primary key;
    a file without one could hold an id twice, and which row wins would be an accident."""
    for index in conn.execute(f"PRAGMA index_list({table})").fetchall():
        if index[2]:  # unique
            cols = [row[2] for row in conn.execute(f"PRAGMA index_info({index[1]!r})")]
            if cols == ["id"]:
                return None
    row = conn.execute(
        f"SELECT id FROM {table} WHERE id IS NOT NULL GROUP BY id HAVING COUNT(*) > 1 "
        "ORDER BY MIN(rowid) LIMIT 1"
    ).fetchone()
    return row[0] if row else None


def undecodable_row(conn: sqlite3.Connection, source: str) -> WorldImportError | None:
    """The first text value that is not UTF-8, as a refusal naming table, row and column:
    SQLite stores any bytes as TEXT, and Python's cursor stops on them with no row named."""
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    names = {t: [row[1] for row in conn.execute(f"PRAGMA table_info({t})")] for t in tables}
    conn.text_factory = bytes
    try:
        for table, columns in COLUMNS.items():
            if table not in tables:
                continue
            cols = names[table]
            picked = ", ".join(f"CASE WHEN typeof({c}) = 'text' THEN {c} END" for c in cols)
            for row in conn.execute(f"SELECT {picked} FROM {table} ORDER BY rowid"):
                for name, value in zip(cols, row, strict=True):
                    if value is None:
                        continue
                    try:
                        value.decode("utf-8")
                    except UnicodeDecodeError:
                        key = columns[0]
                        shown = row[cols.index(key)] if key in cols else None
                        label = shown.decode("utf-8", "replace") if shown else "NULL"
                        return WorldImportError(
                            source, table, f"{key}={label}", f"{name} is not valid UTF-8 text"
                        )
    finally:
        conn.text_factory = str
    return None


class BatchValidator:
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
            # die_with_parent: a killed import takes its helper with it (no orphan).
            self.pool = ProcessPoolExecutor(
                1,
                mp_context=multiprocessing.get_context("spawn"),
                initializer=die_with_parent,
                initargs=(os.getpid(),),
            )

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

    def _check(
        self, rows: list[tuple[str, str, str | None]], found: tuple[int, str] | None
    ) -> None:
        if found is not None:
            raise WorldImportError(self.source, self.table, f"id={rows[found[0]][0]}", found[1])
