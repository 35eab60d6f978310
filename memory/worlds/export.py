"""The way back to the game: write a world as an omnia SQLite file omnia's repository reads.

The era is the one the world came from (or chosen): v1 files have omnia 74ffb45's columns,
v2 files later omnia's (is_agent, connections_json, pinned, the ledger). Admin-edited aliases
travel back in `aliases_json`, as omnia's array of pairs.
"""

from __future__ import annotations

import os
import sqlite3
import tempfile
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from django.db.models import Q

from memory.engine.errors import InvalidInput, NotFound
from memory.models import (
    Attribute,
    AttributeAcl,
    BufferEntry,
    LedgerEntry,
    LedgerInvolvedEntity,
    ObjectType,
    WorldObject,
    WorldSource,
)
from memory.worlds.ddl import OMNIA_V1_DDL, OMNIA_V2_DDL

ERAS = ("v1", "v2")


class UnknownWorld(NotFound):
    """No world has that id."""


class ExportError(InvalidInput):
    pass


def era_of(world_id: str) -> str:
    source = WorldSource.objects.filter(world_id=world_id).first()
    return source.era if source else "v2"


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
    world = WorldObject.objects.filter(pk=world_id, type=ObjectType.WORLD).first()
    if world is None:
        raise UnknownWorld(f"no world with id {world_id!r}", field="world")
    era = era or era_of(world_id)
    if era not in ERAS:
        raise ExportError(f"unknown era {era!r}: choose v1 or v2", field="era")
    path = Path(path)
    fd, tmp_name = tempfile.mkstemp(
        prefix=".omnia-export-", suffix=".sqlite", dir=path.parent or "."
    )
    os.close(fd)
    counts: dict[str, int] = {}
    try:
        conn = sqlite3.connect(tmp_name)
        conn.executescript(OMNIA_V1_DDL if era == "v1" else OMNIA_V2_DDL)
        objects = list(
            WorldObject.objects.filter(Q(pk=world_id) | Q(world_id=world_id)).order_by("id")
        )
        # The world row first: every other row's world_id points at it.
        objects.sort(key=lambda o: o.type != ObjectType.WORLD)
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
        attrs = Attribute.objects.filter(object_id__in=ids).values_list(
            "object_id", "name", "value", "visibility"
        )
        counts["attributes"] = conn.executemany(
            "INSERT INTO attributes VALUES (?,?,?,?)", attrs.iterator()
        ).rowcount
        acl = AttributeAcl.objects.filter(object_id__in=ids).values_list(
            "object_id", "attribute_name", "entity_id"
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
            involved = LedgerInvolvedEntity.objects.filter(
                entry__owner_id__in=entities
            ).values_list("entry_id", "entity_id")
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
