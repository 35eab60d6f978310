"""The way back to the game: write a world as an omnia SQLite file omnia's repository reads.

The era is the one the world came from (or chosen): v1 files have omnia 74ffb45's columns,
v2 files later omnia's (is_agent, connections_json, pinned, the ledger). Admin-edited aliases
travel back in `aliases_json`, as omnia's array of pairs.

Rows go out in the order the game wrote them: omnia reads `objects` with no ORDER BY, so the
order of its world, entity and location lists (and of the world-state text it builds from
them) is the table's rowid order. Imported rows keep their place in the file they came from
(`file_order`); buffer and ledger rows their write order (`created_at`), so what was written
here comes after. Rows with no recorded place (made before it was recorded) follow, by id.
"""

from __future__ import annotations

import os
import secrets
import sqlite3
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from django.db.models import F, OuterRef, Q, Subquery

from memory.active_save import current_id
from memory.engine.errors import InvalidInput, NotFound
from memory.models import (
    Attribute,
    AttributeAcl,
    BufferEntry,
    LedgerEntry,
    LedgerInvolvedEntity,
    ObjectType,
    Save,
    WorldObject,
)
from memory.worlds.ddl import OMNIA_V1_DDL, OMNIA_V2_DDL

ERAS = ("v1", "v2")


class UnknownWorld(NotFound):
    """No world has that id."""


class ExportError(InvalidInput):
    pass


def era_of(world_id: str) -> str:
    """The era the active save came in (its world is written back the same way)."""
    era = Save.objects.filter(pk=current_id()).values_list("era", flat=True).first()
    return era or "v2"


def _ticking(
    rows: Iterable[Any], progress: Callable[[int], None] | None, every: int = 5000
) -> Iterator[Any]:
    """The rows, reporting their count to `progress` every `every` rows."""
    if progress is None:
        yield from rows
        return
    count = 0
    for row in rows:
        yield row
        count += 1
        if count == every:
            progress(count)
            count = 0
    progress(count)


def export_omnia(
    world_id: str,
    path: str | Path,
    *,
    era: str | None = None,
    progress: Callable[[int], None] | None = None,
) -> dict[str, int]:
    """Write one world to `path` atomically (a temp file renamed into place). `progress` is
    called with the count of buffer rows written so far (a command's progress bar)."""
    world = WorldObject.objects.filter(id=world_id, type=ObjectType.WORLD).first()
    if world is None:
        raise UnknownWorld(f"no world with id {world_id!r}", field="world")
    era = era or era_of(world_id)
    if era not in ERAS:
        raise ExportError(f"unknown era {era!r}: choose v1 or v2", field="era")
    path = Path(path)
    tmp_name = _create_beside(path)
    counts: dict[str, int] = {}
    try:
        conn = sqlite3.connect(tmp_name)
        conn.executescript(OMNIA_V1_DDL if era == "v1" else OMNIA_V2_DDL)
        objects = sorted(
            WorldObject.objects.filter(Q(id=world_id) | Q(world_id=world_id)),
            # Without a recorded place the world row first: every other row points at it.
            key=lambda o: (
                o.file_order is None,
                o.file_order or 0,
                o.type != ObjectType.WORLD,
                o.id,
            ),
        )
        ids = [o.id for o in objects]
        if era == "v1":
            conn.executemany(
                "INSERT INTO objects VALUES (?,?,?,?,?,?)",
                [
                    (o.id, o.type, o.world_id, o.clock_iso, o.location_id, o.aliases_json)
                    for o in objects
                ],
            )
        else:
            conn.executemany(
                "INSERT INTO objects (id, type, world_id, clock_iso, location_id, aliases_json, "
                "connections_json, is_agent) VALUES (?,?,?,?,?,?,?,?)",
                [
                    (
                        o.id,
                        o.type,
                        o.world_id,
                        o.clock_iso,
                        o.location_id,
                        o.aliases_json,
                        o.connections_json,
                        o.is_agent,
                    )
                    for o in objects
                ],
            )
        counts["objects"] = len(objects)
        attrs = (
            Attribute.objects.filter(object_id__in=ids)
            .order_by(_file_order(), "object_id", "name")
            .values_list("object_id", "name", "value", "visibility")
        )
        counts["attributes"] = conn.executemany(
            "INSERT INTO attributes VALUES (?,?,?,?)", attrs.iterator()
        ).rowcount
        acl = (
            AttributeAcl.objects.filter(object_id__in=ids)
            .order_by(_file_order(), "object_id", "attribute_name", "entity_id")
            .values_list("object_id", "attribute_name", "entity_id")
        )
        counts["attribute_acl"] = conn.executemany(
            "INSERT INTO attribute_acl VALUES (?,?,?)", acl.iterator()
        ).rowcount
        entities = [o.id for o in objects if o.type == ObjectType.ENTITY]
        buffer = BufferEntry.objects.filter(owner_id__in=entities).order_by("created_at", "id")
        if era == "v1":
            rows = buffer.values_list(
                "id", "owner_id", "timestamp", "location_id", "intent_json", "outcome_json"
            )
            counts["buffer_entries"] = conn.executemany(
                "INSERT INTO buffer_entries VALUES (?,?,?,?,?,?)",
                _ticking(rows.iterator(chunk_size=5000), progress),
            ).rowcount
        else:
            rows = buffer.values_list(
                "id",
                "owner_id",
                "timestamp",
                "location_id",
                "intent_json",
                "outcome_json",
                "pinned",
            )
            counts["buffer_entries"] = conn.executemany(
                "INSERT INTO buffer_entries VALUES (?,?,?,?,?,?,?)",
                _ticking(rows.iterator(chunk_size=5000), progress),
            ).rowcount
            ledger = LedgerEntry.objects.filter(owner_id__in=entities).order_by("created_at", "id")
            counts["ledger_entries"] = conn.executemany(
                "INSERT INTO ledger_entries VALUES (?,?,?,?,?,?,?,?)",
                (
                    (
                        e.id,
                        e.owner_id,
                        e.timestamp,
                        e.location_id,
                        e.content,
                        e.quotes_json,
                        e.importance,
                        bytes(e.embedding) if e.embedding is not None else None,
                    )
                    for e in ledger.iterator(chunk_size=2000)
                ),
            ).rowcount
            involved = (
                LedgerInvolvedEntity.objects.filter(
                    entry_id__in=LedgerEntry.objects.filter(owner_id__in=entities).values("id")
                )
                .annotate(
                    entry_created_at=Subquery(
                        LedgerEntry.objects.filter(id=OuterRef("entry_id")).values("created_at")[:1]
                    )
                )
                .order_by(_file_order(), "entry_created_at", "entry_id", "entity_id")
                .values_list("entry_id", "entity_id")
            )
            counts["ledger_involved_entities"] = conn.executemany(
                "INSERT INTO ledger_involved_entities VALUES (?,?)", involved.iterator()
            ).rowcount
        conn.commit()
        conn.close()
        os.replace(tmp_name, path)
    except BaseException:
        Path(tmp_name).unlink(missing_ok=True)
        raise
    return counts


def _file_order():
    return F("file_order").asc(nulls_last=True)


def _create_beside(path: Path) -> str:
    """A new empty file next to `path` for the atomic rename, created as any file the game
    writes is: mode 0666 less the process umask (0644 under the usual 022), not mkstemp's 0600."""
    directory = path.parent
    while True:
        name = directory / f".omnia-export-{secrets.token_hex(8)}.sqlite"
        try:
            os.close(os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
        except FileExistsError:
            continue
        return str(name)
