"""The import's checks, run on what the source read before a row is written: a row the
import would refuse is refused here too (WorldImportError names the file, table and row), and
a file whose world is not the one followed is another game (Replaced)."""

from __future__ import annotations

from memory.models import LiveFollow, ObjectType
from memory.worlds.live.changes import Changes, Replaced, hash_rows
from memory.worlds.live.source import Patient
from memory.worlds.omnia_import import _read_omnia_objects
from memory.worlds.report import WorldImportError
from memory.worlds.validation import (
    VISIBILITIES,
    BatchValidator,
    integer_problem,
    ledger_row_problem,
    row_label,
    text_field_problem,
)


def check(conn: Patient, source: str, state: LiveFollow, changes: Changes) -> None:
    """The import's checks. The small tables are read again through the
    import's own reader only when their hash moved (the rows then are at least as new as
    the snapshot's: objects a new buffer row names are there)."""
    objects = changes.raw_small[0]
    worlds = {r[0]: r[0] if r[1] == ObjectType.WORLD else (r[2] or r[0]) for r in objects}
    named = {r[2] for r in changes.buffer.new} | {r[2] for r in changes.ledger.new}
    if changes.small_hash != state.small_tables_hash or not named <= set(worlds):
        object_rows, worlds = _read_omnia_objects(conn, source)
        attribute_rows, acl_rows = _read_attributes(conn, source, set(worlds))
        changes.small = (object_rows, attribute_rows, acl_rows, worlds)
        changes.small_hash = hash_rows(object_rows, attribute_rows, acl_rows)
    changes.world_ids = sorted(set(worlds.values()))
    if state.world_id and state.world_id not in changes.world_ids:
        raise Replaced(
            f"world {', '.join(changes.world_ids) or 'none'} instead of {state.world_id}"
        )
    _check_buffer(source, changes.buffer.new, set(worlds))
    _check_ledger(source, changes.ledger.new, set(worlds))
    for _rowid, entry_id, entity_id in changes.involved:
        if problem := text_field_problem("entity_id", entity_id, required=True):
            raise WorldImportError(
                source,
                "ledger_involved_entities",
                f"entry_id={entry_id}, entity_id={entity_id!r}",
                problem,
            )


def _read_attributes(
    conn: Patient, source: str, object_ids: set[str]
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
