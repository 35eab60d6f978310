"""Way in, live: follow an omnia save file while a game writes it (`manage.py follow_omnia`).

The file is opened read-only and kept open. `PRAGMA data_version` on that connection moves
only when another connection committed, so an idle game costs one pragma per tick. A change
is read one statement at a time, each run to its end at once, so the SHARED lock a
rollback-journal writer's COMMIT waits for is held for one statement (a millisecond), and
each statement is tried again every millisecond while the game commits; it is read
incrementally:

- buffer_entries and ledger_entries are append-only but for deletes: rows past the rowid
  watermark are new; a count of the table says whether rows at or before it went away, and
  only then rowid buckets compared with LiveRow (which id stood at which rowid) name them;
  the row at the watermark must still be the one we saw (SQLite hands a deleted last rowid
  to the next insert), else the watermark steps back to the last rowid that still agrees;
- ledger_involved_entities is append-only by rowid (its rows go with their ledger entry);
- objects, attributes and attribute_acl are small: read whole and compared by a content
  hash; when it moved they are synced as an import syncs them.

Each change is applied in one transaction of the inspector's database with the resume state
(LiveFollow, LiveRow) beside it, through the import's own helpers (memory.worlds.bulk:
insert_ignore, sync_objects, ImportClock; the import's row checks), so a follower killed at
any point resumes with no gap and no duplicate. The first batch lands through the save door
(memory.worlds.save_door) into a save of its own. Then the owners whose rows were deleted
are refolded, the projection cycle runs and the stored leak findings follow, and the
follow's version moves (the pages' cue). A file that is not the game we followed any more
(another inode at the path, another world, rows that disagree with what we applied, other
rows where every row we applied stood: a new file that got the old inode) is
followed from its first row into a new save that replaces the old one as `import_omnia
--replace` does.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from django.db import transaction
from django.db.models import Count, F
from django.utils import timezone

from memory.active_save import current_id, use
from memory.engine.clock import is_untimed
from memory.engine.errors import Conflict
from memory.engine.planner import WORLD_TABLES, Growth, refresh_statistics
from memory.engine.projections.refold import refold_owners
from memory.engine.saves import check_name, default_name
from memory.engine.scopes import home_scope
from memory.engine.shards import bump_generations, notify_written, shard_count, shard_of
from memory.engine.upkeep import run_upkeep
from memory.models import (
    BufferEntry,
    LedgerEntry,
    LiveFollow,
    LiveRow,
    ObjectType,
    Save,
    WorldObject,
)
from memory.worlds import bulk
from memory.worlds.omnia_import import _open_omnia, _read_omnia_objects
from memory.worlds.report import ImportReport, WorldImportError
from memory.worlds.save_door import Arrival, land
from memory.worlds.validation import (
    VISIBILITIES,
    BatchValidator,
    integer_problem,
    ledger_row_problem,
    row_label,
    text_field_problem,
)

BATCH_ROWS = 5000  # new rows read per table per batch: bounds one batch's transaction
BUCKET_SHIFT = 10  # rowid buckets of 1,024 when looking for deleted rows
BUCKET_SIZE = 1 << BUCKET_SHIFT
T = TypeVar("T")
REWIND_ROWS = 1024  # a tail that disagrees further back than this is another game


class Replaced(Exception):
    """The file at the path is not the game we were following any more."""


@dataclass
class TableChanges:
    new: list[tuple] = field(default_factory=list)  # (rowid, *columns)
    deleted: list[tuple[int, str]] = field(default_factory=list)  # (rowid, id)
    rewound_to: int | None = None  # the watermark stepped back (a reused last rowid)
    effective_mark: int = 0  # the watermark the rows were read from
    present_before: int | None = None  # set when rows at or before it went away
    mark: int = 0
    mark_id: str = ""
    more: bool = False  # the batch limit left rows for the next batch


@dataclass
class Changes:
    world_ids: list[str]
    era: str
    small: tuple[list, list, list, dict[str, str]] | None  # objects, attributes, acl, worlds
    small_hash: str
    buffer: TableChanges
    ledger: TableChanges
    involved: list[tuple] = field(default_factory=list)  # (rowid, entry_id, entity_id)
    involved_mark: int = 0
    file_mtime: float = 0.0
    raw_small: tuple = ()  # the small tables as the snapshot read them

    @property
    def empty(self) -> bool:
        return not (
            self.small
            or self.buffer.new
            or self.buffer.deleted
            or self.ledger.new
            or self.ledger.deleted
            or self.involved
            or self.buffer.rewound_to is not None
            or self.ledger.rewound_to is not None
        )

    @property
    def more(self) -> bool:
        return self.buffer.more or self.ledger.more


@dataclass
class BatchResult:
    added: dict[str, int] = field(default_factory=dict)
    deleted: dict[str, int] = field(default_factory=dict)
    objects_synced: bool = False
    replaced: str | None = None
    refolded: int = 0
    lag_s: float = 0.0
    version: int = 0

    def summary(self) -> str:
        parts = [f"+{n} {t}" for t, n in self.added.items() if n]
        parts += [f"-{n} {t}" for t, n in self.deleted.items() if n]
        if self.objects_synced:
            parts.append("objects synced")
        if self.replaced:
            parts.insert(0, f"replaced ({self.replaced})")
        return ", ".join(parts) or "nothing new"


def _identity(path: Path) -> tuple[int, int]:
    st = os.stat(path)
    return st.st_dev, st.st_ino


def _hash_rows(*tables: list) -> str:
    digest = hashlib.sha256()
    for rows in tables:
        digest.update(repr(rows).encode("utf-8", "surrogatepass"))
        digest.update(b"\x00")
    return digest.hexdigest()


class FollowRefused(Conflict):
    """The save named is not this file's follow (nothing was written)."""


@dataclass
class _Ours:
    """What the inspector holds for one table, read before the file is, so the file's reads
    follow each other closely."""

    held: int = 0  # LiveRow rows at or before the watermark
    tail: list[tuple[int, str]] = field(default_factory=list)  # the last rows, newest first


class Follower:
    """One followed file feeding one save. `tick()` applies what changed since the last tick
    (or nothing). The save is `name` (default: the file's name, as import_omnia names it)."""

    def __init__(
        self,
        path: str | Path,
        *,
        name: str = "",
        batch_rows: int = BATCH_ROWS,
        actor: str = "",
        command: str = "",
    ):
        self.path = Path(path).resolve()
        self.source = str(self.path)
        self.name = check_name(name or default_name(self.path))
        self.batch_rows = batch_rows
        self.actor, self.command = actor, command
        self.conn: _Patient | None = None
        self.seen_version: int | None = None
        self.last_heartbeat = 0.0
        self._open_identity: tuple[int, int] = (0, 0)
        self._schema_cache: dict[str, object] | None = None
        self.save: Save | None = None
        self.state = LiveFollow(path=self.source)
        self.growth = Growth()
        self._load()

    # --- the resume state ---------------------------------------------------------------

    def _load(self) -> None:
        save = Save.objects.live().filter(name=self.name).first()
        if save is None:
            self.save, self.state = None, LiveFollow(path=self.source)
            return
        follow = LiveFollow.every_save.filter(game_save=save).first()
        if follow is None:
            raise FollowRefused(
                f"save {self.name!r} holds {save.source_name or save.kind} imported "
                f"{save.imported_at:%Y-%m-%d %H:%M} UTC, not a followed game: follow into "
                "another save with --as NEW-NAME",
                field="name",
            )
        if follow.path != self.source:
            raise FollowRefused(
                f"save {self.name!r} follows {follow.path}, not {self.source}: "
                "follow this file into another save with --as NEW-NAME",
                field="name",
            )
        self.save, self.state = save, follow
        self.growth = Growth(at_statistics=BufferEntry.every_save.filter(game_save=save).count())

    def _refresh(self) -> None:
        if self.state.pk is not None:
            self.state = LiveFollow.every_save.get(pk=self.state.pk)

    # --- the file -----------------------------------------------------------------------

    def open(self) -> None:
        """Open the file now: refuses (WorldImportError) one that is missing or no omnia save."""
        self._open()

    def _open(self) -> _Patient:
        if self.conn is None:
            conn = _open_omnia(self.path)  # read-only; refuses a file that is no omnia world
            conn.isolation_level = None  # autocommit: each statement its own short read
            # No busy handler: its growing sleeps (up to 100 ms) keep missing the short gaps
            # between a busy game's commits; _patiently retries every millisecond instead.
            conn.execute("PRAGMA busy_timeout = 0")
            self.conn = _Patient(conn)
            self.seen_version = None
            self._schema_cache = None
            self._open_identity = _identity(self.path)
        return self.conn

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None

    def changed(self) -> bool:
        """Whether the file may hold something we have not applied: a new file at the path,
        a commit since we last looked, or a previous batch that stopped at its limit."""
        if not self.path.is_file():
            return False
        if self.conn is not None and _identity(self.path) != self._open_identity:
            self.close()  # a new file at the path: read it, not the one we hold open
        conn = self._open()
        version = _patiently(lambda: conn.execute("PRAGMA data_version").fetchone()[0])
        moved = version != self.seen_version
        self.seen_version = version
        return moved

    def read(self) -> Changes:
        """Everything that changed: what we hold read first, then the file statement by
        statement; the rows that went away at or before a watermark are named only when a
        count says some did."""
        conn = self._open()
        state = self.state
        if state.device and (state.device, state.inode) != self._open_identity:
            raise Replaced("another file at the path")
        ours = {
            "buffer_entries": self._ours("buffer_entries", state.buffer_mark),
            "ledger_entries": self._ours("ledger_entries", state.ledger_mark),
        }

        def snapshot() -> Changes:
            # No read transaction around it all: each statement is its own read, so the game's
            # commit waits at most for one statement (a millisecond), never for a batch. What
            # one statement sees is consistent; between statements the game may commit, and
            # each check below is written to tolerate that (a row naming an object made since
            # has the small tables read again; involved rows wait for their entry; a count
            # that moved makes a bucket scan that finds nothing; a tail that moved rewinds).
            schema = self._schema(conn)
            small_rows = (
                conn.execute(schema["objects"]).fetchall(),
                conn.execute(
                    "SELECT object_id, name, value, visibility FROM attributes ORDER BY rowid"
                ).fetchall(),
                conn.execute(
                    "SELECT object_id, attribute_name, entity_id FROM attribute_acl ORDER BY rowid"
                ).fetchall(),
            )
            changes = self._read(conn, state, ours)
            changes.raw_small = small_rows
            changes.small_hash = _hash_rows(*small_rows)
            changes.file_mtime = os.stat(self.path).st_mtime
            return changes

        changes = _patiently(snapshot)
        _patiently(lambda: self._check(conn, state, changes))
        for table, tc in (("buffer_entries", changes.buffer), ("ledger_entries", changes.ledger)):
            if tc.present_before is not None:
                self._find_deleted(conn, table, tc)
        return changes

    def _ours(self, table: str, mark: int) -> _Ours:
        if not mark or self.save is None:
            return _Ours()
        with use(self.save):
            rows = LiveRow.objects.filter(table_name=table, rowid__lte=mark)
            return _Ours(
                held=rows.count(),
                tail=list(rows.order_by("-rowid").values_list("rowid", "entry_id")[:REWIND_ROWS]),
            )

    def _schema(self, conn: _Patient) -> dict[str, object]:
        """The file's era and columns, read once per open (a game does not migrate its file
        while it runs; a new file at the path is opened afresh)."""
        if self._schema_cache is None:
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

    def _read(self, conn: _Patient, state: LiveFollow, ours: dict) -> Changes:
        """The append-only tables' new rows as they are, nothing checked yet (the checks
        run afterwards, holding no lock on the file)."""
        schema = self._schema(conn)
        buffer = self._table(
            conn,
            "buffer_entries",
            "id, owner_id, timestamp, location_id, intent_json, outcome_json, "
            + str(schema["pinned"]),
            state.buffer_mark,
            state.buffer_mark_id,
            ours["buffer_entries"],
        )
        changes = Changes(
            world_ids=[],
            era=str(schema["era"]),
            small=None,
            small_hash="",
            buffer=buffer,
            ledger=TableChanges(mark=state.ledger_mark, mark_id=state.ledger_mark_id),
            involved_mark=state.involved_mark,
        )
        if schema["has_ledger"]:
            changes.ledger = self._table(
                conn,
                "ledger_entries",
                "id, owner_id, timestamp, location_id, content, quotes_json, importance, embedding",
                state.ledger_mark,
                state.ledger_mark_id,
                ours["ledger_entries"],
            )
            # Involved rows of the entries this batch applies, not of entries still beyond it.
            limit_entry = changes.ledger.mark
            rows = conn.execute(
                "SELECT i.rowid, i.entry_id, i.entity_id FROM ledger_involved_entities i "
                "JOIN ledger_entries e ON e.id = i.entry_id "
                "WHERE i.rowid > ? AND e.rowid <= ? ORDER BY i.rowid",
                [state.involved_mark, limit_entry],
            ).fetchall()
            # Rows past one still waiting for its entry stay for the next batch.
            waiting = conn.execute(
                "SELECT MIN(i.rowid) FROM ledger_involved_entities i "
                "JOIN ledger_entries e ON e.id = i.entry_id "
                "WHERE i.rowid > ? AND e.rowid > ?",
                [state.involved_mark, limit_entry],
            ).fetchone()[0]
            changes.involved = [r for r in rows if waiting is None or r[0] < waiting]
            if changes.involved:
                changes.involved_mark = changes.involved[-1][0]
        return changes

    def _check(self, conn: _Patient, state: LiveFollow, changes: Changes) -> None:
        """The import's checks. The small tables are read again through the
        import's own reader only when their hash moved (the rows then are at least as new as
        the snapshot's: objects a new buffer row names are there)."""
        objects = changes.raw_small[0]
        worlds = {r[0]: r[0] if r[1] == ObjectType.WORLD else (r[2] or r[0]) for r in objects}
        named = {r[2] for r in changes.buffer.new} | {r[2] for r in changes.ledger.new}
        if changes.small_hash != state.small_tables_hash or not named <= set(worlds):
            object_rows, worlds = _read_omnia_objects(conn, self.source)
            attribute_rows, acl_rows = _read_attributes(conn, self.source, set(worlds))
            changes.small = (object_rows, attribute_rows, acl_rows, worlds)
            changes.small_hash = _hash_rows(object_rows, attribute_rows, acl_rows)
        changes.world_ids = sorted(set(worlds.values()))
        if state.world_id and state.world_id not in changes.world_ids:
            raise Replaced(
                f"world {', '.join(changes.world_ids) or 'none'} instead of {state.world_id}"
            )
        _check_buffer(self.source, changes.buffer.new, set(worlds))
        _check_ledger(self.source, changes.ledger.new, set(worlds))
        for _rowid, entry_id, entity_id in changes.involved:
            if problem := text_field_problem("entity_id", entity_id, required=True):
                raise WorldImportError(
                    self.source,
                    "ledger_involved_entities",
                    f"entry_id={entry_id}, entity_id={entity_id!r}",
                    problem,
                )

    def _table(
        self,
        conn: _Patient,
        table: str,
        columns: str,
        mark: int,
        mark_id: str,
        ours: _Ours,
    ) -> TableChanges:
        """New rows past the watermark; whether rows we applied went away (named later)."""
        out = TableChanges(mark=mark, mark_id=mark_id)
        if mark:
            at_mark = conn.execute(f"SELECT id FROM {table} WHERE rowid = ?", [mark]).fetchone()
            if at_mark is None or at_mark[0] != mark_id:
                # The last row we saw is gone (and its rowid may have been handed out again):
                # step back to the last rowid that still holds the row we applied there.
                mark = _rewind(conn, table, ours.tail)
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

    def _find_deleted(self, conn: _Patient, table: str, tc: TableChanges) -> None:
        """Rows we applied (at or before the watermark) that the file no longer has, found
        bucket by bucket: only buckets whose counts differ are compared id by id."""
        mark = tc.effective_mark
        with use(self.save):
            # Counted by the database on the (save, table, rowid) index: at a million rows
            # the rows never come to Python (which took about a second of every deletion).
            ours = dict(
                LiveRow.objects.filter(table_name=table, rowid__lte=mark)
                .annotate(bucket=F("rowid") / BUCKET_SIZE)
                .values("bucket")
                .annotate(n=Count("*"))
                .values_list("bucket", "n")
            )

        def scan() -> tuple[dict[int, str], list[int]]:
            # One short count per bucket we hold, not one GROUP BY over the file: each
            # statement holds the game's file for a rowid range alone (at 1,000,000 rows the
            # GROUP BY held it 338 ms, the game's commit waiting behind it; these 977 counts
            # take 133 ms together, well under a millisecond each).
            theirs = {
                bucket: conn.execute(
                    f"SELECT COUNT(*) FROM {table} WHERE rowid BETWEEN ? AND ?",
                    [bucket << BUCKET_SHIFT, min(((bucket + 1) << BUCKET_SHIFT) - 1, mark)],
                ).fetchone()[0]
                for bucket in sorted(ours)
            }
            differing = [b for b, n in sorted(ours.items()) if theirs[b] != n]
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

        present, differing = _patiently(scan)
        with use(self.save):
            for bucket in differing:
                low, high = bucket << BUCKET_SHIFT, ((bucket + 1) << BUCKET_SHIFT) - 1
                for rowid, entry_id in LiveRow.objects.filter(
                    table_name=table, rowid__gte=low, rowid__lte=min(high, mark)
                ).values_list("rowid", "entry_id"):
                    if present.get(rowid) != entry_id:
                        # Only the last rowid is ever handed out again (the game deleted its
                        # newest row and wrote another since): the next read rewinds to it.
                        if rowid in present and rowid != mark:
                            raise Replaced(f"{table} rowid {rowid} holds another row")
                        tc.deleted.append((rowid, entry_id))

    # --- applying -----------------------------------------------------------------------

    def apply(self, changes: Changes, replaced: str | None = None) -> BatchResult:
        """One transaction: the rows and the resume state that says they are in. The first
        batch of a save (and of a new game at the path) lands through the save door, as an
        import does: a new save, or with --replace semantics, the old one retired."""
        if self.save is not None and replaced is None:
            with use(self.save), transaction.atomic():
                result = self._apply(changes)
            if self.growth.add(sum(result.added.values())):
                refresh_statistics(WORLD_TABLES)  # the game has doubled since the last ones
        else:
            result = BatchResult(replaced=replaced)

            def fill() -> ImportReport:
                self.state = LiveFollow.objects.create(game_save_id=current_id(), path=self.source)
                result.__dict__.update(self._apply(changes, replaced=replaced).__dict__)
                return ImportReport(
                    source=self.source,
                    era=changes.era,
                    worlds=changes.world_ids,
                    counts=dict(result.added),
                )

            arrival = Arrival(
                name=self.name,
                kind="sqlite",
                source=self.source,
                # No whole-file hash for a file being written: the hash of its small tables
                # and the moment, so the door never takes it for the same file again.
                sha256=f"live:{changes.small_hash}:{time.time_ns()}",
                size=os.stat(self.path).st_size,
                command=self.command,
                actor=self.actor,
                named=True,  # a followed game is its own save, whatever else holds its rows
            )
            land(arrival, replace=replaced is not None, fill=fill)  # statistics taken there
            self.growth = Growth(at_statistics=sum(result.added.values()))
            self.save = Save.objects.live().get(name=self.name)
        self._refresh()
        result.lag_s = max(0.0, time.time() - changes.file_mtime)
        return result

    def _apply(self, changes: Changes, replaced: str | None = None) -> BatchResult:
        result = BatchResult(replaced=replaced)
        state = LiveFollow.objects.select_for_update().get(pk=self.state.pk)
        marks = bulk.lock_all_shards()
        touched: set[str] = set()
        deleted_owners: set[str] = set()
        if changes.small is not None:
            object_rows, attribute_rows, acl_rows, worlds = changes.small
            gone = WorldObject.objects.filter(world_id__in=changes.world_ids).exclude(
                id__in=list(worlds)
            )
            gone_ids = list(gone.values_list("id", flat=True))
            if gone_ids:  # the game removed objects: their rows go with them
                deleted_owners.update(gone_ids)
                for model in (BufferEntry, LedgerEntry):
                    model.objects.filter(owner_id__in=gone_ids).delete()
                gone.delete()
            bulk.sync_objects(object_rows, attribute_rows, acl_rows)
            # The save's source hash is part of every viewer's leak-findings fingerprint: a
            # moved hash is how the stored findings learn that the world changed.
            Save.objects.filter(pk=current_id()).update(source_sha256=f"live:{changes.small_hash}")
            result.objects_synced = True
        clock = bulk.ImportClock(marks)
        for table, model, tc in (
            ("buffer_entries", BufferEntry, changes.buffer),
            ("ledger_entries", LedgerEntry, changes.ledger),
        ):
            if tc.deleted:
                ids = [entry_id for _rowid, entry_id in tc.deleted]
                for start in range(0, len(ids), 500):
                    chunk = model.objects.filter(id__in=ids[start : start + 500])
                    deleted_owners.update(o for o in chunk.values_list("owner_id", flat=True) if o)
                    result.deleted[table] = result.deleted.get(table, 0) + chunk.count()
                    chunk.delete()
                rowids = [r for r, _ in tc.deleted]
                for start in range(0, len(rowids), 500):
                    LiveRow.objects.filter(
                        table_name=table, rowid__in=rowids[start : start + 500]
                    ).delete()
            if tc.rewound_to is not None:
                LiveRow.objects.filter(table_name=table, rowid__gt=tc.rewound_to).delete()
        shards = shard_count()
        buffer_rows = [
            (
                *row[1:],
                clock.take(shard_of(row[2], shards)),
                shard_of(row[2], shards),
                is_untimed(row[3]),
            )
            for row in changes.buffer.new
        ]
        added = bulk.insert_ignore("buffer_entries", bulk.BUFFER_COLUMNS, buffer_rows)
        if added != len(buffer_rows):
            _check_owners(self.source, "buffer_entries", BufferEntry, changes.buffer.new)
        result.added["buffer_entries"] = added
        touched.update(row[2] for row in changes.buffer.new)
        ledger_rows = [
            (
                *row[1:],
                home_scope(row[2]),
                f"ledger/{row[1]}",
                clock.take(shard_of(row[2], shards)),
            )
            for row in changes.ledger.new
        ]
        added = bulk.insert_ignore("ledger_entries", bulk.LEDGER_COLUMNS, ledger_rows)
        if added != len(ledger_rows):
            _check_owners(self.source, "ledger_entries", LedgerEntry, changes.ledger.new)
        result.added["ledger_entries"] = added
        touched.update(row[2] for row in changes.ledger.new if row[2])
        # file_order: the row's rowid in the file, so an export keeps the game's order.
        result.added["ledger_involved_entities"] = bulk.insert_ignore(
            "ledger_involved_entities",
            ("entry_id", "entity_id", "file_order"),
            [(entry_id, entity_id, rowid) for rowid, entry_id, entity_id in changes.involved],
        )
        LiveRow.objects.bulk_create(
            [
                LiveRow(table_name=table, rowid=row[0], entry_id=row[1])
                for table, tc in (
                    ("buffer_entries", changes.buffer),
                    ("ledger_entries", changes.ledger),
                )
                for row in tc.new
            ],
            batch_size=1000,
        )
        bump_generations(touched | deleted_owners)
        bulk.advance_shards(clock.assigned)
        pending = set(json.loads(state.pending_refold)) | deleted_owners
        identity = self._open_identity
        LiveFollow.objects.filter(pk=state.pk).update(
            world_id=changes.world_ids[0] if changes.world_ids else "",
            device=identity[0],
            inode=identity[1],
            buffer_mark=changes.buffer.mark,
            buffer_mark_id=changes.buffer.mark_id,
            ledger_mark=changes.ledger.mark,
            ledger_mark_id=changes.ledger.mark_id,
            involved_mark=changes.involved_mark,
            small_tables_hash=changes.small_hash,
            pending_refold=json.dumps(sorted(pending)),
            batches=state.batches + 1,
            applied_at=timezone.now(),
        )
        notify_written()
        return result

    def follow_up(self, result: BatchResult | None = None) -> BatchResult:
        """The derived rows, current in the same cycle: owners with deleted rows refolded, the
        projection cycle, the stored leak findings; then the version the pages poll moves."""
        result = result or BatchResult()
        with use(self.save):
            pending = json.loads(self.state.pending_refold)
            if pending:
                result.refolded = refold_owners(pending)
            run_upkeep()
            LiveFollow.objects.filter(pk=self.state.pk).update(
                pending_refold="[]", version=F("version") + 1, heartbeat_at=timezone.now()
            )
        self._refresh()
        result.version = self.state.version
        return result

    def heartbeat(self, every: float = 2.0) -> None:
        now = time.monotonic()
        if self.state.pk is not None and now - self.last_heartbeat >= every:
            LiveFollow.every_save.filter(pk=self.state.pk).update(heartbeat_at=timezone.now())
            self.last_heartbeat = now

    # --- one tick -----------------------------------------------------------------------

    def tick(self) -> BatchResult | None:
        """Apply one batch if the file changed; None when nothing changed."""
        if self.save is not None and json.loads(self.state.pending_refold):
            self.follow_up()  # a follower stopped before its follow-up: finish that first
        if not self.changed():
            self.heartbeat()
            return None
        replaced = None
        try:
            changes = self.read()
        except Replaced as exc:
            # Another game: read it from its first row, into a save that replaces this one.
            replaced = str(exc)
            self.state = LiveFollow(path=self.source)
            self.close()
            self.changed()
        try:
            if replaced is not None:
                changes = self.read()
            if changes.empty and replaced is None and self.save is not None:
                self.heartbeat()
                return None
            result = self.apply(changes, replaced=replaced)
        except BaseException:
            self._load()  # nothing was applied: back to the state that is stored
            raise
        # The rows are readable now: pages may show them before the fold and the leak
        # rescan (the follow-up moves the version again once those are current).
        LiveFollow.every_save.filter(pk=self.state.pk).update(version=F("version") + 1)
        if changes.more:
            self.seen_version = None  # rows wait beyond the batch: read on at the next tick
        return self.follow_up(result)


class _Patient:
    """The file's read-only connection, each statement run to its end at once (so it holds
    the file's read lock for that statement alone) and tried again every millisecond while
    the game commits."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.raw = conn

    def execute(self, sql: str, params: Sequence[object] = ()) -> _Rows:
        return _Rows(_patiently(lambda: self.raw.execute(sql, params).fetchall()))

    def close(self) -> None:
        self.raw.close()


class _Rows(list):
    def fetchall(self) -> list:
        return self

    def fetchone(self) -> object:
        return self[0] if self else None


def _patiently(step: Callable[[], T], timeout: float = 10.0) -> T:
    """`step()`, tried again every millisecond while the game holds its file (a commit);
    sqlite3.OperationalError "locked" after `timeout` seconds of that."""
    started = time.monotonic()
    while True:
        try:
            return step()
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() - started > timeout:
                raise
            time.sleep(0.001)


def _rewind(conn: _Patient, table: str, tail: list[tuple[int, str]]) -> int:
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


def _read_attributes(
    conn: _Patient, source: str, object_ids: set[str]
) -> tuple[list[tuple], list[tuple]]:
    """The attributes and ACL rows, checked as the import checks them."""
    attribute_rows: list[tuple] = []
    names: set[tuple] = set()
    for row in conn.execute(
        "SELECT object_id, name, value, visibility FROM attributes ORDER BY rowid"
    ):
        where = f"object_id={row[0]}, name={row[1]}"
        problem = (
            text_field_problem("name", row[1], required=True)
            or text_field_problem("value", row[2], required=True)
            or ("duplicate attribute" if (row[0], row[1]) in names else None)
            or (f"object {row[0]!r} is not in the file" if row[0] not in object_ids else None)
            or (
                f"visibility {row[3]!r} is not PUBLIC or PRIVATE"
                if row[3] not in VISIBILITIES
                else None
            )
        )
        if problem is not None:
            raise WorldImportError(source, "attributes", where, problem)
        names.add((row[0], row[1]))
        attribute_rows.append(tuple(row))
    acl_rows: list[tuple] = []
    for row in conn.execute(
        "SELECT object_id, attribute_name, entity_id FROM attribute_acl ORDER BY rowid"
    ):
        where = f"object_id={row[0]}, attribute_name={row[1]}, entity_id={row[2]!r}"
        problem = text_field_problem("entity_id", row[2], required=True) or (
            "refers to an attribute that is not in the file"
            if (row[0], row[1]) not in names
            else None
        )
        if problem is not None:
            raise WorldImportError(source, "attribute_acl", where, problem)
        acl_rows.append(tuple(row))
    return attribute_rows, acl_rows


def _check_buffer(source: str, rows: list[tuple], object_ids: set[str]) -> None:
    """The import's checks of a buffer row (its intent and outcome by the import's validator)."""
    checks = []
    validator = BatchValidator(source, "buffer_entries", parallel=False)
    for _rowid, entry_id, owner_id, timestamp, location_id, intent, outcome, pinned in rows:
        problem = (
            text_field_problem("id", entry_id, required=True)
            or (
                f"owner {owner_id!r} is not an object in the file"
                if owner_id not in object_ids
                else None
            )
            or text_field_problem("timestamp", timestamp, required=True)
            or ("intent_json must be text" if type(intent) is not str else None)
            or (
                "outcome_json must be text or NULL"
                if outcome is not None and type(outcome) is not str
                else None
            )
            or text_field_problem("location_id", location_id)
            or (integer_problem("pinned", pinned, 0, 1) if pinned is not None else None)
        )
        if problem is not None:
            validator.before_error_at(checks)
            raise WorldImportError(source, "buffer_entries", row_label(entry_id), problem)
        checks.append((entry_id, intent, outcome))
    validator.submit(checks)
    validator.finish()


def _check_ledger(source: str, rows: list[tuple], object_ids: set[str]) -> None:
    for _rowid, *row in rows:
        problem = ledger_row_problem(tuple(row), object_ids)
        if problem is not None:
            raise WorldImportError(source, "ledger_entries", row_label(row[0]), problem)


def _check_owners(source: str, table: str, model, rows: list[tuple]) -> None:
    """A row skipped on conflict must be the same row (a resumed batch), never another
    world's row with the same id."""
    by_id = {row[1]: row[2] for row in rows}
    ids = list(by_id)
    for start in range(0, len(ids), 500):
        for entry_id, owner in model.objects.filter(id__in=ids[start : start + 500]).values_list(
            "id", "owner_id"
        ):
            if owner != by_id[entry_id]:
                raise WorldImportError(
                    source, table, f"id={entry_id}", f"id already belongs to {owner!r}"
                )


def follow(
    follower: Follower,
    *,
    interval: float,
    should_stop: Callable[[], bool],
    report: Callable[[BatchResult], None],
    on_error: Callable[[Exception], None],
) -> None:
    """Tick until asked to stop; a stop request lets the batch in hand finish first."""
    while not should_stop():
        try:
            result = follower.tick()
        except (WorldImportError, sqlite3.OperationalError) as exc:
            # A row we refuse, or the game holding its file past our busy timeout (a slow
            # commit): nothing was applied; look again after a pause.
            if isinstance(exc, sqlite3.OperationalError) and "locked" not in str(exc):
                raise
            on_error(exc)
            follower.close()
            follower.seen_version = None
            result = None
            time.sleep(interval)
        if result is not None:
            report(result)
            if follower.seen_version is None:
                continue  # a batch left rows behind: on at once
        if not should_stop():
            time.sleep(interval)
