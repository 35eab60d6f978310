"""Way in, live: follow an omnia save file while a game writes it (`manage.py follow_omnia`).

The file is opened read-only and kept open. `PRAGMA data_version` on that connection moves
only when another connection committed, so an idle game costs one pragma per tick. A change
is read in one short read transaction (the SHARED lock a rollback-journal writer's COMMIT
waits for is held for milliseconds) and read incrementally:

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
any point resumes with no gap and no duplicate. Then the owners whose rows were deleted are
refolded, the projection cycle runs and the stored leak findings follow, and the follow's
version moves (the pages' cue). A file that is not the game we followed any more (another
inode at the path, another world, rows that disagree with what we applied) is replaced: the
old world goes and the new file is followed from its first row.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from memory.engine.clock import is_untimed
from memory.engine.projections.refold import refold_owners
from memory.engine.scopes import home_scope
from memory.engine.shards import bump_generations, notify_written, shard_count, shard_of
from memory.engine.strict_json import json_text_problem
from memory.engine.upkeep import run_upkeep
from memory.models import (
    BufferEntry,
    LeakFinding,
    LeakScan,
    LedgerEntry,
    LiveFollow,
    LiveRow,
    WorldObject,
    WorldSource,
)
from memory.worlds import bulk
from memory.worlds.omnia_import import _open_omnia, _read_omnia_objects
from memory.worlds.report import WorldImportError
from memory.worlds.validation import (
    VISIBILITIES,
    BatchValidator,
    integer_problem,
    row_label,
    text_field_problem,
)

BATCH_ROWS = 5000  # new rows read per table per batch: bounds one read transaction
BUCKET_SHIFT = 10  # rowid buckets of 1,024 when looking for deleted rows
REWIND_LIMIT = 10_000  # a tail that disagrees further back than this is another game

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


class Replaced(Exception):
    """The file at the path is not the game we were following any more."""


@dataclass
class TableChanges:
    new: list[tuple] = field(default_factory=list)  # (rowid, *columns)
    deleted: list[tuple[int, str]] = field(default_factory=list)  # (rowid, id)
    rewound_to: int | None = None  # the watermark stepped back (a reused last rowid)
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


class Follower:
    """One followed file. `tick()` applies what changed since the last tick (or nothing)."""

    def __init__(self, path: str | Path, *, name: str = "", batch_rows: int = BATCH_ROWS):
        self.path = Path(path).resolve()
        self.source = str(self.path)
        self.name = name
        self.batch_rows = batch_rows
        self.conn: sqlite3.Connection | None = None
        self.seen_version: int | None = None
        self.last_heartbeat = 0.0
        self._open_identity: tuple[int, int] = (0, 0)
        self.state = self._state()

    # --- the resume state ---------------------------------------------------------------

    def _state(self) -> LiveFollow:
        follow, _ = LiveFollow.objects.get_or_create(path=self.source, defaults={"name": self.name})
        return follow

    # --- the file -----------------------------------------------------------------------

    def open(self) -> None:
        """Open the file now: refuses (WorldImportError) one that is missing or no omnia save."""
        self._open()

    def _open(self) -> sqlite3.Connection:
        if self.conn is None:
            conn = _open_omnia(self.path)  # read-only; refuses a file that is no omnia world
            conn.isolation_level = None  # our own BEGIN/COMMIT: one short read transaction
            self.conn = conn
            self.seen_version = None
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
        identity = _identity(self.path)
        if self.conn is not None and identity != self._open_identity:
            self.close()  # a new file at the path: read it, not the one we hold open
        conn = self._open()
        self._open_identity = identity
        version = conn.execute("PRAGMA data_version").fetchone()[0]
        moved = version != self.seen_version
        self.seen_version = version
        return moved

    def read(self) -> Changes:
        """Everything that changed, in one read transaction (a consistent snapshot)."""
        conn = self._open()
        state = self.state
        identity = self._open_identity
        if state.device and (state.device, state.inode) != identity:
            raise Replaced("another file at the path")
        conn.execute("BEGIN")
        try:
            return self._read(conn, state)
        finally:
            conn.execute("COMMIT")

    def _read(self, conn: sqlite3.Connection, state: LiveFollow) -> Changes:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        has_ledger = "ledger_entries" in tables
        buffer_cols = {r[1] for r in conn.execute("PRAGMA table_info(buffer_entries)")}
        era = "v2" if ("pinned" in buffer_cols or has_ledger) else "v1"
        object_rows, worlds = _read_omnia_objects(conn, self.source)
        world_ids = sorted(set(worlds.values()))
        if state.world_id and state.world_id not in world_ids:
            raise Replaced(f"world {', '.join(world_ids) or 'none'} instead of {state.world_id}")
        attribute_rows, acl_rows = _read_attributes(conn, self.source, set(worlds))
        small_hash = _hash_rows(object_rows, attribute_rows, acl_rows)
        small = None
        if small_hash != state.small_tables_hash:
            small = (object_rows, attribute_rows, acl_rows, worlds)
        pinned = "pinned" if "pinned" in buffer_cols else "0"
        buffer = self._table(
            conn,
            "buffer_entries",
            "id, owner_id, timestamp, location_id, intent_json, outcome_json, " + pinned,
            state.buffer_mark,
            state.buffer_mark_id,
        )
        _check_buffer(self.source, buffer.new, set(worlds))
        changes = Changes(
            world_ids=world_ids,
            era=era,
            small=small,
            small_hash=small_hash,
            buffer=buffer,
            ledger=TableChanges(),
            involved_mark=state.involved_mark,
            file_mtime=os.stat(self.path).st_mtime,
        )
        if has_ledger:
            changes.ledger = self._table(
                conn,
                "ledger_entries",
                "id, owner_id, timestamp, location_id, content, quotes_json, importance, embedding",
                state.ledger_mark,
                state.ledger_mark_id,
            )
            _check_ledger(self.source, changes.ledger.new, set(worlds))
            # Involved rows of the entries this batch applies, not of entries still beyond it.
            limit_entry = changes.ledger.mark
            rows = conn.execute(
                "SELECT i.rowid, i.entry_id, i.entity_id FROM ledger_involved_entities i "
                "JOIN ledger_entries e ON e.id = i.entry_id "
                "WHERE i.rowid > ? AND e.rowid <= ? ORDER BY i.rowid",
                [state.involved_mark, limit_entry],
            ).fetchall()
            for _rowid, entry_id, entity_id in rows:
                if problem := text_field_problem("entity_id", entity_id, required=True):
                    raise WorldImportError(
                        self.source,
                        "ledger_involved_entities",
                        f"entry_id={entry_id}, entity_id={entity_id!r}",
                        problem,
                    )
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

    def _table(
        self, conn: sqlite3.Connection, table: str, columns: str, mark: int, mark_id: str
    ) -> TableChanges:
        """New rows past the watermark and the rows we applied that the game deleted."""
        out = TableChanges(mark=mark, mark_id=mark_id)
        if mark:
            at_mark = conn.execute(f"SELECT id FROM {table} WHERE rowid = ?", [mark]).fetchone()
            if at_mark is None or at_mark[0] != mark_id:
                # The last row we saw is gone (and its rowid may have been handed out again):
                # step back to the last rowid that still holds the row we applied there.
                mark = self._rewind(conn, table, mark)
                out.rewound_to = mark
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
        held = self._held(table, mark)
        present = conn.execute(f"SELECT COUNT(*) FROM {table} WHERE rowid <= ?", [mark]).fetchone()
        if present[0] != held:
            out.deleted = self._deleted(conn, table, mark)
        if out.rewound_to is not None:
            out.deleted += [
                (r, i)
                for r, i in LiveRow.objects.filter(
                    follow=self.state, table_name=table, rowid__gt=mark
                ).values_list("rowid", "entry_id")
            ]
        return out

    def _held(self, table: str, mark: int) -> int:
        return LiveRow.objects.filter(follow=self.state, table_name=table, rowid__lte=mark).count()

    def _rewind(self, conn: sqlite3.Connection, table: str, mark: int) -> int:
        ours = LiveRow.objects.filter(follow=self.state, table_name=table, rowid__lte=mark)
        descending = ours.order_by("-rowid").values_list("rowid", "entry_id").iterator()
        for checked, (rowid, entry_id) in enumerate(descending):
            if checked > REWIND_LIMIT:
                raise Replaced(f"{table} disagrees with what was applied")
            found = conn.execute(f"SELECT id FROM {table} WHERE rowid = ?", [rowid]).fetchone()
            if found is not None and found[0] == entry_id:
                return rowid
        return 0

    def _deleted(self, conn: sqlite3.Connection, table: str, mark: int) -> list[tuple[int, str]]:
        """Rows we applied (rowid <= mark) that the file no longer has, found bucket by bucket:
        only buckets whose counts differ are compared id by id."""
        theirs = dict(
            conn.execute(
                f"SELECT rowid >> {BUCKET_SHIFT}, COUNT(*) FROM {table} WHERE rowid <= ? "
                "GROUP BY 1",
                [mark],
            ).fetchall()
        )
        ours: dict[int, int] = {}
        for rowid in LiveRow.objects.filter(
            follow=self.state, table_name=table, rowid__lte=mark
        ).values_list("rowid", flat=True):
            bucket = rowid >> BUCKET_SHIFT
            ours[bucket] = ours.get(bucket, 0) + 1
        gone: list[tuple[int, str]] = []
        for bucket, count in sorted(ours.items()):
            if theirs.get(bucket, 0) == count:
                continue
            low, high = bucket << BUCKET_SHIFT, min(((bucket + 1) << BUCKET_SHIFT) - 1, mark)
            present = {
                r[0]: r[1]
                for r in conn.execute(
                    f"SELECT rowid, id FROM {table} WHERE rowid BETWEEN ? AND ?", [low, high]
                )
            }
            for rowid, entry_id in LiveRow.objects.filter(
                follow=self.state, table_name=table, rowid__gte=low, rowid__lte=high
            ).values_list("rowid", "entry_id"):
                if present.get(rowid) != entry_id:
                    if rowid in present:
                        raise Replaced(f"{table} rowid {rowid} holds another row")
                    gone.append((rowid, entry_id))
        return gone

    # --- applying -----------------------------------------------------------------------

    def apply(self, changes: Changes) -> BatchResult:
        """One transaction: the rows and the resume state that says they are in."""
        result = BatchResult()
        state = self.state
        with transaction.atomic():
            state = LiveFollow.objects.select_for_update().get(pk=state.pk)
            marks = bulk.lock_all_shards()
            touched: set[str] = set()
            deleted_owners: set[str] = set()
            if changes.small is not None:
                object_rows, attribute_rows, acl_rows, worlds = changes.small
                bulk.check_world_ownership(self.source, worlds)
                bulk.check_references(
                    self.source,
                    set(worlds),
                    set(changes.world_ids),
                    [
                        *(("objects", f"id={r[0]}", "location_id", r[4]) for r in object_rows),
                        *(
                            (
                                "attribute_acl",
                                f"object_id={r[0]}, attribute_name={r[1]}",
                                "entity_id",
                                r[2],
                            )
                            for r in acl_rows
                        ),
                    ],
                )
                gone = WorldObject.objects.filter(world_id__in=changes.world_ids).exclude(
                    pk__in=list(worlds)
                )
                gone_ids = list(gone.values_list("id", flat=True))
                if gone_ids:  # the game removed objects: their rows go with them (cascade)
                    deleted_owners.update(gone_ids)
                    gone.delete()
                bulk.sync_objects(object_rows, attribute_rows, acl_rows)
                # The world's source row carries the small tables' hash: a moved hash is how
                # the stored leak findings learn that the world changed (their fingerprint).
                bulk.record_source(
                    changes.world_ids, changes.era, "sqlite", self.source, changes.small_hash
                )
                result.objects_synced = True
            clock = bulk.ImportClock(marks)
            for table, model, tc in (
                ("buffer_entries", BufferEntry, changes.buffer),
                ("ledger_entries", LedgerEntry, changes.ledger),
            ):
                if tc.deleted:
                    ids = [entry_id for _rowid, entry_id in tc.deleted]
                    for start in range(0, len(ids), 500):
                        chunk = model.objects.filter(pk__in=ids[start : start + 500])
                        deleted_owners.update(
                            o for o in chunk.values_list("owner_id", flat=True) if o
                        )
                        result.deleted[table] = result.deleted.get(table, 0) + chunk.count()
                        chunk.delete()
                    LiveRow.objects.filter(
                        follow=state, table_name=table, rowid__in=[r for r, _ in tc.deleted]
                    ).delete()
                if tc.rewound_to is not None:
                    LiveRow.objects.filter(
                        follow=state, table_name=table, rowid__gt=tc.rewound_to
                    ).delete()
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
            added = bulk.insert_ignore("buffer_entries", BUFFER_COLUMNS, buffer_rows)
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
            added = bulk.insert_ignore("ledger_entries", LEDGER_COLUMNS, ledger_rows)
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
                    LiveRow(follow=state, table_name=table, rowid=row[0], entry_id=row[1])
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
                name=self.name or state.name,
                world_id=changes.world_ids[0] if changes.world_ids else "",
                device=identity[0],
                inode=identity[1],
                buffer_mark=changes.buffer.mark,
                buffer_mark_id=changes.buffer.mark_id,
                ledger_mark=changes.ledger.mark if changes.ledger.mark else state.ledger_mark,
                ledger_mark_id=changes.ledger.mark_id or state.ledger_mark_id,
                involved_mark=changes.involved_mark,
                small_tables_hash=changes.small_hash,
                pending_refold=json.dumps(sorted(pending)),
                batches=state.batches + 1,
                applied_at=timezone.now(),
            )
            notify_written()
        self.state.refresh_from_db()
        result.lag_s = max(0.0, time.time() - changes.file_mtime)
        return result

    def follow_up(self, result: BatchResult | None = None) -> BatchResult:
        """The derived rows, current in the same cycle: owners with deleted rows refolded, the
        projection cycle, the stored leak findings; then the version the pages poll moves."""
        result = result or BatchResult()
        pending = json.loads(self.state.pending_refold)
        if pending:
            result.refolded = refold_owners(pending)
        run_upkeep()
        LiveFollow.objects.filter(pk=self.state.pk).update(pending_refold="[]")
        self.bump_version()
        result.version = self.state.version
        return result

    def bump_version(self) -> None:
        LiveFollow.objects.filter(pk=self.state.pk).update(
            version=F("version") + 1, heartbeat_at=timezone.now()
        )
        self.state.refresh_from_db()

    def heartbeat(self, every: float = 2.0) -> None:
        now = time.monotonic()
        if now - self.last_heartbeat >= every:
            LiveFollow.objects.filter(pk=self.state.pk).update(heartbeat_at=timezone.now())
            self.last_heartbeat = now

    # --- replacing ----------------------------------------------------------------------

    def replace(self, reason: str) -> None:
        """Another game at the path: the old world goes (as a re-import with --replace would
        drop it) and the resume state starts over; the next batches read the new file."""
        self.close()
        with transaction.atomic():
            state = LiveFollow.objects.select_for_update().get(pk=self.state.pk)
            old = state.world_id
            owners: list[str] = []
            if old:
                members = WorldObject.objects.filter(world_id=old)
                owners = list(members.values_list("id", flat=True))
                LeakFinding.objects.filter(viewer_id__in=owners).delete()
                LeakScan.objects.filter(viewer_id__in=owners).delete()
                members.delete()
                WorldObject.objects.filter(pk=old).delete()
                WorldSource.objects.filter(world_id=old).delete()
            LiveRow.objects.filter(follow=state).delete()
            LiveFollow.objects.filter(pk=state.pk).update(
                world_id="",
                device=0,
                inode=0,
                buffer_mark=0,
                buffer_mark_id="",
                ledger_mark=0,
                ledger_mark_id="",
                involved_mark=0,
                small_tables_hash="",
                pending_refold=json.dumps(
                    sorted(set(json.loads(state.pending_refold)) | set(owners))
                ),
            )
        self.state.refresh_from_db()

    # --- one tick -----------------------------------------------------------------------

    def tick(self) -> BatchResult | None:
        """Apply one batch if the file changed; None when nothing changed."""
        if json.loads(self.state.pending_refold):
            self.follow_up()  # a follower stopped before its follow-up: finish that first
        if not self.changed():
            self.heartbeat()
            return None
        replaced = None
        try:
            changes = self.read()
        except Replaced as exc:
            replaced = str(exc)
            self.replace(replaced)
            self.changed()
            changes = self.read()
        if changes.empty and replaced is None:
            self.heartbeat()
            return None
        result = self.apply(changes)
        result.replaced = replaced
        if changes.more:
            self.seen_version = None  # rows wait beyond the batch: read on at the next tick
        return self.follow_up(result)


def _read_attributes(
    conn: sqlite3.Connection, source: str, object_ids: set[str]
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
    for (
        _rowid,
        entry_id,
        owner_id,
        timestamp,
        location_id,
        content,
        quotes,
        importance,
        emb,
    ) in rows:
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
                if emb is not None and not isinstance(emb, bytes)
                else None
            )
        )
        if problem is None and quotes is not None:
            problem = json_text_problem(quotes)
            if problem is None:
                try:
                    json.loads(quotes)
                except ValueError:
                    problem = "quotes_json is not JSON"
        if problem is not None:
            raise WorldImportError(source, "ledger_entries", row_label(entry_id), problem)


def _check_owners(source: str, table: str, model, rows: list[tuple]) -> None:
    """A row skipped on conflict must be the same row (a resumed batch), never another
    world's row with the same id."""
    by_id = {row[1]: row[2] for row in rows}
    ids = list(by_id)
    for start in range(0, len(ids), 500):
        for entry_id, owner in model.objects.filter(pk__in=ids[start : start + 500]).values_list(
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
        except WorldImportError as exc:
            on_error(exc)  # the file holds a row we refuse: nothing applied; try again later
            follower.seen_version = None
            result = None
            time.sleep(interval)
        if result is not None:
            report(result)
            if follower.seen_version is None:
                continue  # a batch left rows behind: on at once
        if not should_stop():
            time.sleep(interval)
