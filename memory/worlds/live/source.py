"""The game's save file, read: opened read-only for one look and closed after it, so between
looks the follower holds nothing on the file (an idle read-only connection to a WAL file
keeps the game's `PRAGMA journal_mode=DELETE` failing "database is locked", issue 29). Whether
there is anything to look at is the file's and its -wal's stat (device, inode, size, mtime),
so an idle game costs two stat calls per tick; a stat whose mtime is within RACY_S of the look
is not trusted (git's racily-clean rule: a second commit in the same timestamp tick would
leave it unchanged) and is looked at again. A change is read one statement at a time, each run
to its end at once, so the SHARED lock a rollback-journal writer's COMMIT waits for is held for
one statement (a millisecond), and each statement is tried again every millisecond while the
game commits; it is read incrementally:

- buffer_entries and ledger_entries are append-only but for deletes: rows past the rowid
  watermark are new; a count of the table says whether rows at or before it went away, and
  only then rowid buckets compared with what we hold (which id stood at which rowid) name
  them; the row at the watermark must still be the one we saw (SQLite hands a deleted last
  rowid to the next insert), else the watermark steps back to the last rowid that still
  agrees;
- ledger_involved_entities is append-only by rowid (its rows go with their ledger entry);
- objects, attributes and attribute_acl are small: read whole and compared by a content
  hash; when it moved they are synced as an import syncs them;
- a row the game rewrites in place (same rowid and id, new content) moves no count and no
  watermark: after every change a sweep compares the rows at or before the watermark with
  ours, `SWEEP_ROWS` per look (changes.SWEEP_ROWS), until it has seen them all.

Nothing here knows Django: what the inspector holds comes in as plain data (changes.Ours,
the follow's marks).
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

from memory.worlds.live.changes import (
    BATCH_ROWS,
    BUCKET_SHIFT,
    COLUMNS,
    REWIND_ROWS,
    Changes,
    Marks,
    Ours,
    Replaced,
    TableChanges,
    hash_rows,
)
from memory.worlds.omnia_import import FileLocked, _open_omnia
from memory.worlds.report import WorldImportError

T = TypeVar("T")


class NotWhole(WorldImportError):
    """The file as a whole is not an omnia world now (a table or column gone, damage): a
    follower waits for it to be whole again, where a row refused waits for the game."""


SWEEP_STATEMENT_ROWS = 200  # rows of the sweep read per statement
RACY_S = 1.0  # a stat this recent may hide a second commit made in the same timestamp tick


def identity(path: Path) -> tuple[int, int]:
    st = os.stat(path)
    return st.st_dev, st.st_ino


def signature(path: Path) -> tuple:
    """The file's and its -wal's (device, inode, size, mtime): a commit moves one of them."""
    marks: list[tuple | None] = []
    for each in (path, path.with_name(path.name + "-wal")):
        try:
            st = os.stat(each)
        except FileNotFoundError:
            marks.append(None)
            continue
        marks.append((st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns))
    return tuple(marks)


def racy(marks: tuple) -> bool:
    newest = max((m[3] for m in marks if m is not None), default=0)
    return time.time_ns() - newest < RACY_S * 1e9


class GameFile:
    """The followed file: whether it moved, its era and columns, and its rows since the marks."""

    def __init__(self, path: Path, *, batch_rows: int = BATCH_ROWS) -> None:
        self.path = path
        self.batch_rows = batch_rows
        self.conn: Patient | None = None
        self.seen_version: tuple | None = None  # the stat signature at the last look
        self.identity: tuple[int, int] = (0, 0)  # (device, inode) of the file held open
        self._schema_cache: dict[str, object] | None = None

    def open(self) -> Patient:
        """The open connection, opened now if need be: refuses (WorldImportError) a file that
        is missing or no omnia save."""
        if self.conn is None:
            conn = patiently(self._open_read_only)  # refuses a file that is no omnia world
            conn.isolation_level = None  # autocommit: each statement its own short read
            # No busy handler: its growing sleeps (up to 100 ms) keep missing the short gaps
            # between a busy game's commits; patiently retries every millisecond instead.
            conn.execute("PRAGMA busy_timeout = 0")
            self.conn = Patient(conn)
            self.seen_version = None
            self._schema_cache = None
            self.identity = identity(self.path)
        return self.conn

    def _open_read_only(self) -> sqlite3.Connection:
        try:
            return _open_omnia(self.path)
        except FileLocked:
            # The game holds its file (an exclusive lock, a long commit): a wait, not a
            # refusal (issue 29 reported a game's lock as "not an omnia SQLite world").
            raise sqlite3.OperationalError("database is locked") from None
        except WorldImportError as exc:
            raise NotWhole(exc.source, exc.table, exc.row, exc.problem) from None

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None

    def changed(self) -> bool:
        """Whether the file may hold something we have not applied: its stat moved (a commit,
        a new file at the path), its stat is too recent to trust, or a previous batch stopped
        at its limit (seen_version None). Opens nothing."""
        if not self.path.is_file():
            return False
        marks = signature(self.path)
        moved = marks != self.seen_version or racy(marks)
        self.seen_version = marks
        return moved

    def snapshot(self, marks: Marks, ours: dict[str, Ours]) -> Changes:
        """The small tables whole and the append-only tables' new rows, as they are, nothing
        checked yet (the checks run afterwards, holding no lock on the file).

        No read transaction around it all: each statement is its own read, so the game's
        commit waits at most for one statement (a millisecond), never for a batch. What one
        statement sees is consistent; between statements the game may commit, and each check
        is written to tolerate that (a row naming an object made since has the small tables
        read again; involved rows wait for their entry; a count that moved makes a bucket scan
        that finds nothing; a tail that moved rewinds)."""
        conn = self.open()
        schema = self.schema()
        small_rows = (
            conn.execute(schema["objects"]).fetchall(),
            conn.execute(
                "SELECT object_id, name, value, visibility FROM attributes ORDER BY rowid"
            ).fetchall(),
            conn.execute(
                "SELECT object_id, attribute_name, entity_id FROM attribute_acl ORDER BY rowid"
            ).fetchall(),
        )
        changes = self._read(conn, marks, ours)
        changes.raw_small = small_rows
        changes.small_hash = hash_rows(*small_rows)
        changes.file_mtime = os.stat(self.path).st_mtime
        return changes

    def schema(self) -> dict[str, object]:
        """The file's era and columns, read once per open (a game does not migrate its file
        while it runs; a new file at the path is opened afresh)."""
        if self._schema_cache is None:
            conn = self.open()
            tables = {
                r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")
            }
            buffer_cols = {r[1] for r in conn.execute("PRAGMA table_info(buffer_entries)")}
            object_cols = {r[1] for r in conn.execute("PRAGMA table_info(objects)")}
            has_ledger = "ledger_entries" in tables
            extra = [c if c in object_cols else "NULL" for c in ("connections_json", "is_agent")]
            self._schema_cache = {
                "has_ledger": has_ledger,
                "era": "v2" if ("pinned" in buffer_cols or has_ledger) else "v1",
                "pinned": "pinned" if "pinned" in buffer_cols else "0",
                "objects": "SELECT id, type, world_id, clock_iso, location_id, aliases_json, "
                f"{extra[0]}, {extra[1]} FROM objects ORDER BY rowid",
            }
        return self._schema_cache

    def columns(self, table: str) -> str:
        """The columns a batch reads of `table` (a v1 file has no `pinned`: 0)."""
        pinned = str(self.schema()["pinned"])
        return ", ".join(pinned if c == "pinned" else c for c in COLUMNS[table])

    def rows_between(self, table: str, after: int, upto: int, limit: int) -> list[tuple]:
        """The rows after rowid `after` up to `upto`, at most `limit`, with a batch's columns:
        one window of the rewrite sweep, read SWEEP_STATEMENT_ROWS a statement (each holds the
        game's commit back only for itself: a window in one statement of 2,000 rows made the
        stand-in's commit wait 77 ms on a loaded machine)."""
        conn = self.open()
        rows: list[tuple] = []
        while len(rows) < limit:
            step = conn.execute(
                f"SELECT rowid, {self.columns(table)} FROM {table} "
                "WHERE rowid > ? AND rowid <= ? ORDER BY rowid LIMIT ?",
                [
                    rows[-1][0] if rows else after,
                    upto,
                    min(SWEEP_STATEMENT_ROWS, limit - len(rows)),
                ],
            ).fetchall()
            rows.extend(step)
            if len(step) < SWEEP_STATEMENT_ROWS:
                break
        return rows

    def _read(self, conn: Patient, marks: Marks, ours: dict[str, Ours]) -> Changes:
        """The append-only tables' new rows past the marks (and the involved rows of the
        ledger entries among them)."""
        schema = self.schema()
        buffer = self._table(
            conn,
            "buffer_entries",
            self.columns("buffer_entries"),
            marks.buffer_mark,
            marks.buffer_mark_id,
            ours["buffer_entries"],
        )
        changes = Changes(
            world_ids=[],
            era=str(schema["era"]),
            small=None,
            small_hash="",
            buffer=buffer,
            ledger=TableChanges(mark=marks.ledger_mark, mark_id=marks.ledger_mark_id),
            involved_mark=marks.involved_mark,
        )
        if schema["has_ledger"]:
            changes.ledger = self._table(
                conn,
                "ledger_entries",
                self.columns("ledger_entries"),
                marks.ledger_mark,
                marks.ledger_mark_id,
                ours["ledger_entries"],
            )
            # Involved rows of the entries this batch applies, not of entries still beyond it.
            limit_entry = changes.ledger.mark
            rows = conn.execute(
                "SELECT i.rowid, i.entry_id, i.entity_id FROM ledger_involved_entities i "
                "JOIN ledger_entries e ON e.id = i.entry_id "
                "WHERE i.rowid > ? AND e.rowid <= ? ORDER BY i.rowid",
                [marks.involved_mark, limit_entry],
            ).fetchall()
            # Rows past one still waiting for its entry stay for the next batch.
            waiting = conn.execute(
                "SELECT MIN(i.rowid) FROM ledger_involved_entities i "
                "JOIN ledger_entries e ON e.id = i.entry_id "
                "WHERE i.rowid > ? AND e.rowid > ?",
                [marks.involved_mark, limit_entry],
            ).fetchone()[0]
            changes.involved = [r for r in rows if waiting is None or r[0] < waiting]
            if changes.involved:
                changes.involved_mark = changes.involved[-1][0]
        return changes

    def _table(
        self,
        conn: Patient,
        table: str,
        columns: str,
        mark: int,
        mark_id: str,
        ours: Ours,
    ) -> TableChanges:
        """New rows past the watermark; whether rows we applied went away (named later)."""
        out = TableChanges(mark=mark, mark_id=mark_id)
        if mark:
            at_mark = conn.execute(f"SELECT id FROM {table} WHERE rowid = ?", [mark]).fetchone()
            if at_mark is None or at_mark[0] != mark_id:
                # The last row we saw is gone (and its rowid may have been handed out again):
                # step back to the last rowid that still holds the row we applied there.
                mark = rewind(conn, table, ours.tail)
                out.rewound_to = mark
                out.deleted = [(r, i) for r, i in ours.tail if r > mark]
        rows = conn.execute(
            f"SELECT rowid, {columns} FROM {table} WHERE rowid > ? ORDER BY rowid LIMIT ?",
            [mark, self.batch_rows],
        ).fetchall()
        out.more = len(rows) == self.batch_rows
        out.new = rows
        if rows:
            out.mark, out.mark_id = rows[-1][0], rows[-1][1]
        elif out.rewound_to is not None:
            out.mark = mark
            found = conn.execute(f"SELECT id FROM {table} WHERE rowid = ?", [mark]).fetchone()
            out.mark_id = found[0] if found else ""
        # Rows at or before the watermark, counted as the whole table less its tail: both are
        # cheap (SQLite counts a table from its smallest index; the tail is a rowid range).
        total, tail = conn.execute(
            f"SELECT (SELECT COUNT(*) FROM {table}), (SELECT COUNT(*) FROM {table} WHERE rowid > ?)",
            [mark],
        ).fetchone()
        out.effective_mark = mark
        expected = ours.held - sum(1 for rowid, _id in ours.tail if rowid > mark)
        if total - tail != expected:
            out.present_before = total - tail
        return out

    def scan_buckets(
        self, table: str, held: dict[int, int], mark: int
    ) -> tuple[dict[int, str], list[int]]:
        """The rows (rowid: id) of the buckets whose counts differ from what we hold, and those
        buckets. One short count per bucket we hold, not one GROUP BY over the file: each
        statement holds the game's file for a rowid range alone (at 1,000,000 rows the GROUP
        BY held it 338 ms, the game's commit waiting behind it; these 977 counts take 133 ms
        together, well under a millisecond each)."""
        conn = self.open()
        theirs = {
            bucket: conn.execute(
                f"SELECT COUNT(*) FROM {table} WHERE rowid BETWEEN ? AND ?",
                [bucket << BUCKET_SHIFT, min(((bucket + 1) << BUCKET_SHIFT) - 1, mark)],
            ).fetchone()[0]
            for bucket in sorted(held)
        }
        differing = [b for b, n in sorted(held.items()) if theirs[b] != n]
        present: dict[int, str] = {}
        for bucket in differing:
            low, high = bucket << BUCKET_SHIFT, ((bucket + 1) << BUCKET_SHIFT) - 1
            present.update(
                conn.execute(
                    f"SELECT rowid, id FROM {table} WHERE rowid BETWEEN ? AND ?",
                    [low, min(high, mark)],
                ).fetchall()
            )
        return present, differing


class Patient:
    """The file's read-only connection, each statement run to its end at once (so it holds
    the file's read lock for that statement alone) and tried again every millisecond while
    the game commits."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.raw = conn

    def execute(self, sql: str, params: Sequence[object] = ()) -> Rows:
        return Rows(patiently(lambda: self.raw.execute(sql, params).fetchall()))

    def close(self) -> None:
        self.raw.close()


class Rows(list):
    def fetchall(self) -> list:
        return self

    def fetchone(self) -> object:
        return self[0] if self else None


LOCK_PATIENCE_S = 2.0  # a commit is milliseconds; a lock held longer is said, then waited on


def patiently(step: Callable[[], T], timeout: float = LOCK_PATIENCE_S) -> T:
    """`step()`, tried again every millisecond while the game holds its file (a commit);
    sqlite3.OperationalError "locked" after `timeout` seconds of that (the follow loop says
    "the game holds a lock; waiting" and looks again)."""
    started = time.monotonic()
    while True:
        try:
            return step()
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() - started > timeout:
                raise
            time.sleep(0.001)


def rewind(conn: Patient, table: str, tail: list[tuple[int, str]]) -> int:
    """The newest rowid of ours that still holds the row we applied there; 0 when the file
    holds none of them (the rows we hold are then all gone); Replaced when our tail is
    longer than we looked at and none of it is there, or when none of it is there and other
    rows hold its rowids: another game."""
    taken = False
    for rowid, entry_id in tail:
        found = conn.execute(f"SELECT id FROM {table} WHERE rowid = ?", [rowid]).fetchone()
        if found is not None and found[0] == entry_id:
            return rowid
        taken = taken or found is not None
    if len(tail) >= REWIND_ROWS:
        raise Replaced(f"{table} disagrees with what was applied")
    if taken:
        # Every row we applied is gone and other rows stand at their rowids: the game would
        # have had to wipe its whole table and write again, which is what a new game at the
        # path looks like when the filesystem hands it the old file's inode (ext4 does).
        raise Replaced(f"{table}: other rows stand where the rows applied were")
    return 0
