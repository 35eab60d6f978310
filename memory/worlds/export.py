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
import stat
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from django.db import connections
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
# A new file gets the mode SQLite itself gives one (issue 30): better-sqlite3 creates
# omnia's files with SQLite's default 0644, less the process umask (0644 under 022 or 002,
# 0640 under 027, 0600 under 077). An existing file keeps its own mode.
NEW_FILE_MODE = 0o644


def _umask() -> int:
    """The process umask, read without changing it where Linux says it (os.umask can only
    be read by setting it, which another thread could see)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def new_file_mode() -> int:
    return NEW_FILE_MODE & ~_umask()


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
    force: bool = False,
) -> dict[str, int]:
    """Write one world to `path` atomically (a temp file renamed into place). An existing
    file is replaced only with `force` (keeping its mode); the store's own database, and any
    file this process has open, never. `progress` is called with the count of buffer rows
    written so far (a command's progress bar)."""
    world = WorldObject.objects.filter(id=world_id, type=ObjectType.WORLD).first()
    if world is None:
        raise UnknownWorld(f"no world with id {world_id!r}", field="world")
    era = era or era_of(world_id)
    if era not in ERAS:
        raise ExportError(f"unknown era {era!r}: choose v1 or v2", field="era")
    path = Path(path)
    mode = _target_mode(path, force)
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
        os.chmod(tmp_name, mode)
        _put_in_place(tmp_name, path, force)
    except BaseException:
        Path(tmp_name).unlink(missing_ok=True)
        raise
    return counts


def _file_order():
    return F("file_order").asc(nulls_last=True)


def _target_mode(path: Path, force: bool) -> int:
    """The mode the written file gets, once `path` is known to be one we may write: refused
    (ExportError) when it is the store's own database or a file this process holds open
    (`--force` or not: `export_omnia` to DATABASE_URL's path turned a 540 MB store into a
    100 KB omnia file), anything but a regular file, or an existing file without `force`."""
    try:
        found = path.stat()
    except FileNotFoundError:
        return new_file_mode()
    except OSError as exc:
        raise ExportError(f"{path}: {exc.strerror}", field="path") from None
    key = (found.st_dev, found.st_ino)
    if key in _database_files():
        raise ExportError(
            f"{path} is the inspector's own database: choose another path", field="path"
        )
    if not stat.S_ISREG(found.st_mode):
        raise ExportError(f"{path} exists and is not a regular file", field="path")
    if key in _open_files():
        raise ExportError(
            f"{path} is a file this process has open: choose another path", field="path"
        )
    if not force:
        raise ExportError(f"{path} exists: add --force to replace it", field="path")
    return stat.S_IMODE(found.st_mode)


def _file_keys(paths: Iterable[str]) -> set[tuple[int, int]]:
    keys = set()
    for name in paths:
        try:
            found = os.stat(name)
        except OSError:
            continue
        keys.add((found.st_dev, found.st_ino))
    return keys


def _database_files() -> set[tuple[int, int]]:
    """The SQLite files of every configured database (with their journals), whatever the
    path that names them."""
    names = []
    for wrapper in connections.all():  # their settings only: no cursor, no query
        settings = wrapper.settings_dict
        if settings["ENGINE"].endswith("sqlite3") and settings.get("NAME"):
            base = str(settings["NAME"])
            names += [base, base + "-wal", base + "-shm", base + "-journal"]
    return _file_keys(names)


def _open_files() -> set[tuple[int, int]]:
    """Every file this process holds open (Linux's /proc; elsewhere none are known)."""
    try:
        fds = os.listdir("/proc/self/fd")
    except OSError:
        return set()
    return _file_keys(f"/proc/self/fd/{fd}" for fd in fds)


def _put_in_place(tmp_name: str, path: Path, force: bool) -> None:
    """The finished file at `path`. Without `force` by a hard link, which fails rather than
    replace a file that appeared since the check; with it by rename (atomic either way)."""
    if force:
        os.replace(tmp_name, path)
        return
    try:
        os.link(tmp_name, path)
    except FileExistsError:
        raise ExportError(f"{path} exists: add --force to replace it", field="path") from None
    except OSError:  # a filesystem without hard links
        if path.exists():
            raise ExportError(f"{path} exists: add --force to replace it", field="path") from None
        os.replace(tmp_name, path)
        return
    os.unlink(tmp_name)


def _create_beside(path: Path) -> str:
    """A new empty file next to `path` for the atomic rename; its mode is set once written."""
    directory = path.parent
    while True:
        name = directory / f".omnia-export-{secrets.token_hex(8)}.sqlite"
        try:
            os.close(os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
        except FileExistsError:
            continue
        return str(name)
