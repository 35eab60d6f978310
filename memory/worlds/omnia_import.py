"""Way in: an omnia SQLite world file, of either era, read into the inspector's database.

Atomic: the whole file is read and validated first (streaming, for the big buffer table), rows
are written in one transaction, and any bad row aborts everything with a message naming the
file, the table and the row. Re-importing the same file changes nothing.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Callable
from pathlib import Path

from memory.engine import text_index
from memory.engine.aliases import AliasesJsonError, parse_aliases_json
from memory.engine.clock import is_untimed
from memory.engine.saves import default_name
from memory.engine.scopes import home_scope
from memory.engine.shards import bump_generations, shard_count, shard_of
from memory.engine.strict_json import json_text_problem
from memory.models import ObjectType
from memory.worlds import bulk
from memory.worlds.report import ImportReport, WorldImportError
from memory.worlds.save_door import Arrival, land
from memory.worlds.validation import (
    OBJECT_TYPES,
    VISIBILITIES,
    BatchValidator,
    check_columns,
    first_duplicate,
    integer_problem,
    ledger_row_problem,
    row_label,
    text_field_problem,
    undecodable_row,
)

BATCH = 5000


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


class FileLocked(WorldImportError):
    """The file could not be read because another connection holds a lock on it."""


def _open_omnia(path: Path) -> sqlite3.Connection:
    source = str(path)
    if not path.is_file():
        raise WorldImportError(source, "-", "-", "no such file")
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        tables = {
            row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")
        }
    except sqlite3.DatabaseError as exc:
        if "locked" in str(exc) or "busy" in str(exc):
            # A game mid-commit (or holding an exclusive lock): the file may be a fine world.
            raise FileLocked(
                source, "-", "-", "the game holds a lock on the file; try again when it lets go"
            ) from None
        raise WorldImportError(source, "-", "-", f"not an omnia SQLite world ({exc})") from None
    missing = {"objects", "attributes", "attribute_acl", "buffer_entries"} - tables
    if "ledger_entries" in tables:
        missing |= {"ledger_involved_entities"} - tables
    if missing:
        conn.close()
        raise WorldImportError(
            source, ", ".join(sorted(missing)), "-", "table missing: not an omnia world file"
        )
    try:
        check_columns(conn, source, tables)
    except WorldImportError:
        conn.close()
        raise
    return conn


def _columns(conn: sqlite3.Connection, table: str) -> set[str]:
    return {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}


def _read_omnia_objects(
    conn: sqlite3.Connection, source: str
) -> tuple[list[tuple], dict[str, str]]:
    cols = _columns(conn, "objects")
    extra = [c if c in cols else "NULL" for c in ("connections_json", "is_agent")]
    rows = conn.execute(
        "SELECT id, type, world_id, clock_iso, location_id, aliases_json, "
        f"{extra[0]}, {extra[1]} FROM objects ORDER BY rowid"
    ).fetchall()
    worlds: dict[str, str] = {}
    for row in rows:
        object_id, type_, world_id = row[0], row[1], row[2]
        where = row_label(object_id)
        problem = (
            text_field_problem("id", object_id, required=True)
            or (f"unknown object type {type_!r}" if type_ not in OBJECT_TYPES else None)
            or text_field_problem("world_id", world_id)
            or text_field_problem("clock_iso", row[3])
            or text_field_problem("location_id", row[4])
            or text_field_problem("aliases_json", row[5])
            or text_field_problem("connections_json", row[6])
            or integer_problem("is_agent", row[7], 0, 1)
        )
        if problem is None and object_id in worlds:
            problem = "duplicate id (the file has no primary key on objects.id)"
        if problem is not None:
            raise WorldImportError(source, "objects", where, problem)
        for name, text in (("aliases_json", row[5]), ("connections_json", row[6])):
            if text is not None and (problem := json_text_problem(text)):
                raise WorldImportError(source, "objects", where, f"{name}: {problem}")
        try:
            parse_aliases_json(row[5])
        except AliasesJsonError as exc:
            raise WorldImportError(source, "objects", where, f"aliases_json: {exc}") from None
        if row[6] is not None:
            try:
                json.loads(row[6])
            except ValueError:
                raise WorldImportError(
                    source, "objects", where, "connections_json is not JSON"
                ) from None
        worlds[object_id] = object_id if type_ == ObjectType.WORLD else (world_id or object_id)
    ids = set(worlds)
    for row in rows:
        if row[2] is not None and row[2] not in ids:
            raise WorldImportError(
                source, "objects", f"id={row[0]}", f"world_id {row[2]!r} is not in the file"
            )
    return rows, worlds


def import_omnia(
    path: str | Path,
    *,
    as_name: str | None = None,
    replace: bool = False,
    progress: Callable[[int], None] | None = None,
    command: str = "",
    actor: str = "",
) -> ImportReport:
    """Read an omnia SQLite world file (either era) into a save of its own: `as_name`, else
    the file's name (save_door: the same file again is a no-op, another is refused unless
    `replace`)."""
    path = Path(path)
    source = str(path)
    conn = _open_omnia(path)
    try:
        arrival = Arrival(
            name=as_name if as_name is not None else default_name(path),
            kind="sqlite",
            source=source,
            sha256=_sha256(path),
            size=path.stat().st_size,
            command=command,
            actor=actor,
            named=as_name is not None,
        )
        return land(arrival, replace=replace, fill=lambda: _import_omnia(conn, source, progress))
    except sqlite3.DatabaseError as exc:
        # Text that is not UTF-8 stops the cursor mid-table; find the row it stopped on.
        found = undecodable_row(conn, source) if "decode" in str(exc) else None
        raise found or WorldImportError(
            source, "-", "-", f"unreadable SQLite file ({exc})"
        ) from None
    finally:
        conn.close()


def _import_omnia(conn: sqlite3.Connection, source: str, progress) -> ImportReport:
    tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    buffer_cols = _columns(conn, "buffer_entries")
    has_ledger = "ledger_entries" in tables
    era = "v2" if ("pinned" in buffer_cols or has_ledger) else "v1"

    object_rows, worlds = _read_omnia_objects(conn, source)
    object_ids = set(worlds)
    attribute_rows = []
    attribute_names: set[tuple] = set()
    for row in conn.execute(
        "SELECT object_id, name, value, visibility FROM attributes ORDER BY rowid"
    ):
        where = f"object_id={row[0]}, name={row[1]}"
        problem = text_field_problem("name", row[1], required=True) or text_field_problem(
            "value", row[2], required=True
        )
        if problem is None and (row[0], row[1]) in attribute_names:
            problem = "duplicate attribute (the file has no primary key on attributes)"
        if problem is not None:
            raise WorldImportError(source, "attributes", where, problem)
        attribute_names.add((row[0], row[1]))
        if row[0] not in object_ids:
            raise WorldImportError(
                source, "attributes", where, f"object {row[0]!r} is not in the file"
            )
        if row[3] not in VISIBILITIES:
            raise WorldImportError(
                source, "attributes", where, f"visibility {row[3]!r} is not PUBLIC or PRIVATE"
            )
        if not isinstance(row[2], str):
            raise WorldImportError(source, "attributes", where, "value must be text")
        attribute_rows.append(tuple(row))
    attribute_keys = {(row[0], row[1]) for row in attribute_rows}
    acl_rows = []
    for row in conn.execute(
        "SELECT object_id, attribute_name, entity_id FROM attribute_acl ORDER BY rowid"
    ):
        if problem := text_field_problem("entity_id", row[2], required=True):
            raise WorldImportError(
                source,
                "attribute_acl",
                f"object_id={row[0]}, attribute_name={row[1]}, entity_id={row[2]!r}",
                problem,
            )
        if (row[0], row[1]) not in attribute_keys:
            raise WorldImportError(
                source,
                "attribute_acl",
                f"object_id={row[0]}, attribute_name={row[1]}, entity_id={row[2]}",
                "refers to an attribute that is not in the file",
            )
        acl_rows.append(tuple(row))

    for table in ("buffer_entries", "ledger_entries") if has_ledger else ("buffer_entries",):
        duplicate = first_duplicate(conn, table)
        if duplicate is not None:
            raise WorldImportError(
                source,
                table,
                row_label(duplicate),
                f"duplicate id (the file has no primary key on {table}.id)",
            )

    world_ids = sorted(set(worlds.values()))
    report = ImportReport(source=source, era=era, worlds=world_ids)
    pinned_col = "pinned" if "pinned" in buffer_cols else "0"
    shards = shard_count()

    # Inside save_door.land's transaction, into a save of its own that is empty until now.
    marks = bulk.lock_all_shards()
    report.counts.update(bulk.sync_objects(object_rows, attribute_rows, acl_rows))
    clock = bulk.ImportClock(marks)
    inserted = seen = 0
    cursor = conn.execute(
        "SELECT id, owner_id, timestamp, location_id, intent_json, outcome_json, "
        f"{pinned_col} FROM buffer_entries ORDER BY rowid"
    )
    incoming = conn.execute("SELECT COUNT(*) FROM buffer_entries").fetchone()[0]
    shard_by_owner: dict[str, int] = {}  # a handful of owners, a million rows
    written_for: set[str] = set()  # owners that got new memories: their generation moves
    validator = BatchValidator(source, "buffer_entries", parallel=incoming >= bulk.BULK_INDEX_ROWS)
    try:
        with bulk.indexes_built_after("buffer_entries", incoming), text_index.filled_after():
            while batch := cursor.fetchmany(BATCH):
                checks: list[tuple[str, str, str | None]] = []
                rows = []
                for (
                    entry_id,
                    owner_id,
                    timestamp,
                    location_id,
                    intent_json,
                    outcome_json,
                    pinned,
                ) in batch:
                    # Cheap tests first (a million rows pass here); the helper words it.
                    problem = None
                    if type(entry_id) is not str or not entry_id or "\x00" in entry_id:
                        problem = text_field_problem("id", entry_id, required=True)
                    elif owner_id not in object_ids:
                        problem = f"owner {owner_id!r} is not an object in the file"
                    elif type(timestamp) is not str or not timestamp or "\x00" in timestamp:
                        problem = text_field_problem("timestamp", timestamp, required=True)
                    elif type(intent_json) is not str:
                        problem = "intent_json must be text"
                    elif outcome_json is not None and type(outcome_json) is not str:
                        problem = "outcome_json must be text or NULL"
                    elif location_id is not None and (
                        type(location_id) is not str or "\x00" in location_id
                    ):
                        problem = text_field_problem("location_id", location_id)
                    elif pinned is not None and (type(pinned) is not int or pinned not in (0, 1)):
                        problem = integer_problem("pinned", pinned, 0, 1)
                    if problem is not None:
                        validator.before_error_at(checks)
                        raise WorldImportError(
                            source, "buffer_entries", row_label(entry_id), problem
                        )
                    checks.append((entry_id, intent_json, outcome_json))
                    shard = shard_by_owner.get(owner_id)
                    if shard is None:
                        shard = shard_by_owner[owner_id] = shard_of(owner_id, shards)
                    rows.append(
                        (
                            entry_id,
                            owner_id,
                            timestamp,
                            location_id,
                            intent_json,
                            outcome_json,
                            pinned,
                            clock.take(shard),
                            shard,
                            # a time omnia wrote that names no instant: kept, marked
                            is_untimed(timestamp),
                        )
                    )
                validator.submit(checks)  # validated there while inserted here
                added = bulk.insert_ignore("buffer_entries", bulk.BUFFER_COLUMNS, rows)
                if added:  # (a batch partly known already bumps all its owners: safe side)
                    written_for.update(row[1] for row in rows)
                inserted += added
                seen += len(rows)
                if progress:
                    progress(len(rows))
            validator.finish()  # every batch clean before the indexes and the commit
    finally:
        validator.close()
    report.counts["buffer_entries"] = inserted
    report.skipped["buffer_entries"] = seen - inserted
    if has_ledger:
        written_for |= _import_ledger(conn, source, object_ids, clock, report, worlds)
    bump_generations(written_for)
    bulk.advance_shards(clock.assigned)
    return report


def _import_ledger(
    conn, source, object_ids, clock: bulk.ImportClock, report: ImportReport, worlds
) -> set[str]:
    """Import the long-term ledger; returns the owners that got new entries."""
    rows = []
    for row in conn.execute(
        "SELECT id, owner_id, timestamp, location_id, content, quotes_json, importance, embedding "
        "FROM ledger_entries ORDER BY rowid"
    ):
        entry_id, owner_id, timestamp, location_id, content, quotes_json, importance, embedding = (
            row
        )
        problem = ledger_row_problem(row, object_ids)
        if problem is not None:
            raise WorldImportError(source, "ledger_entries", row_label(entry_id), problem)
        rows.append(
            (
                entry_id,
                owner_id,
                timestamp,
                location_id,
                content,
                quotes_json,
                importance,
                embedding,
                home_scope(owner_id),
                f"ledger/{entry_id}",
                clock.take(shard_of(owner_id)),
            )
        )
    inserted = bulk.insert_ignore("ledger_entries", bulk.LEDGER_COLUMNS, rows)
    ledger_ids = {row[0] for row in rows}
    involved = []
    for entry_id, entity_id in conn.execute(
        "SELECT entry_id, entity_id FROM ledger_involved_entities ORDER BY rowid"
    ):
        if problem := text_field_problem("entity_id", entity_id, required=True):
            raise WorldImportError(
                source,
                "ledger_involved_entities",
                f"entry_id={entry_id}, entity_id={entity_id!r}",
                problem,
            )
        if entry_id not in ledger_ids:
            raise WorldImportError(
                source,
                "ledger_involved_entities",
                f"entry_id={entry_id}, entity_id={entity_id}",
                "refers to a ledger entry that is not in the file",
            )
        involved.append((entry_id, entity_id))
    report.counts["ledger_entries"] = inserted
    report.skipped["ledger_entries"] = len(rows) - inserted
    report.counts["ledger_involved_entities"] = bulk.insert_ignore(
        "ledger_involved_entities",
        ("entry_id", "entity_id", "file_order"),
        bulk.with_file_order(involved),
    )
    return {row[1] for row in rows if row[1]} if inserted else set()
