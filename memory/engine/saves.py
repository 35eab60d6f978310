"""Saves: naming one, finding one, and removing one with everything under it (issue 16).

A save is one playthrough: the rows one file or scenario brought, under a name people chose.
Everything else in the engine works inside the active save (memory/active_save.py); this
module is where a name becomes that save, where the saves are listed for the pages that span
them, and where one is retired (replaced) or deleted.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import TypeVar

from django.apps import apps
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from memory.active_save import current_id, instances, scoped_cursor, use
from memory.engine import audit
from memory.engine.errors import Conflict, InvalidInput, NotFound
from memory.models import ObjectType, Save, WorldObject

T = TypeVar("T")

# A name travels in URLs and shells unescaped: letters, digits, and . _ - inside.
NAME_PATTERN = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._-]{0,62}[A-Za-z0-9])?")
# A retired save stays readable this long after a --replace, so a page that looked its save
# up before the swap still finds every row of the old one; purged at the next import or cycle.
RETIRED_GRACE = timedelta(seconds=60)

# omnia's tables, children first: the order a save's rows are deleted in.
MIRRORED_TABLES = (
    "ledger_involved_entities",
    "ledger_entries",
    "buffer_entries",
    "attribute_acl",
    "attributes",
    "objects",
)


class AmbiguousSave(LookupError):
    """No save named, and not exactly one that fits: the caller must name one."""

    def __init__(self, names: list[str]) -> None:
        self.names = names
        if names:
            message = f"{len(names)} saves hold worlds: {', '.join(names)}; choose one"
        else:
            message = "no save is loaded yet: import a world first"
        super().__init__(message)


def check_name(name: str) -> str:
    if not NAME_PATTERN.fullmatch(name or ""):
        raise InvalidInput(
            f"{name!r} is not a save name: use 1-64 letters, digits, '.', '_' or '-', "
            "starting and ending with a letter or digit",
            field="name",
        )
    return name


def default_name(path: str | Path) -> str:
    """A save's name when the user gives none: the file's name without its extension."""
    stem = Path(str(path)).name
    for suffix in (".sqlite3", ".sqlite", ".db", ".json"):
        if stem.lower().endswith(suffix):
            stem = stem[: -len(suffix)]
            break
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", stem).strip("-._")[:64].strip("-._")
    return name or "save"


def _live(condition: str = "", params: Sequence[object] = ()) -> list[Save]:
    """The live saves (Save.objects.live()) meeting `condition`, by name. Raw: every page
    under a save looks its save up, and the ORM built the statement in longer than the
    database answered it (a save by name 1.04 -> 0.44 ms on PostgreSQL, 0.52 -> 0.14 on SQLite)."""
    return instances(Save, f"retired_at IS NULL{condition} ORDER BY name", params)


def live_saves() -> list[Save]:
    return _live()


def find_save(name: str) -> Save | None:
    """The live save of this name, if there is one."""
    found = _live(" AND name = %s", [str(name)])
    return found[0] if found else None


def get_save(name: str) -> Save:
    save = find_save(name)
    if save is None:
        names = [s.name for s in live_saves()]
        known = f"; saves here: {', '.join(names)}" if names else "; no save is loaded yet"
        raise NotFound(f"no save named {name!r}{known}", field="save")
    return save


def resolve_save(name: str | None = None, *, object_id: str | None = None) -> Save:
    """The save a command means: the one named; else the only one; else the one save that
    holds `object_id`. AmbiguousSave (listing the candidates) when that still leaves several."""
    if name:
        return get_save(name)
    saves = live_saves()
    if len(saves) == 1:
        return saves[0]
    if object_id is not None and saves:
        holding = set(
            WorldObject.every_save.filter(
                id=object_id, game_save__retired_at__isnull=True
            ).values_list("game_save_id", flat=True)
        )
        candidates = [s for s in saves if s.pk in holding]
        if len(candidates) == 1:
            return candidates[0]
        if candidates:
            raise AmbiguousSave([s.name for s in candidates])
    raise AmbiguousSave([s.name for s in saves])


def each_save(work: Callable[[Save], T]) -> Iterator[tuple[Save, T]]:
    """`work(save)` inside each live save in turn, by name. The save is active for `work`
    alone: the caller's loop body runs in whatever save was active before, not in this one."""
    for save in live_saves():
        with use(save):
            result = work(save)
        yield save, result


def current_save_name() -> str:
    """The active save's name (for audit targets and messages)."""
    return Save.objects.filter(pk=current_id()).values_list("name", flat=True).first() or ""


def world_ids() -> list[str]:
    """The active save's worlds. Sorted here, not by ORDER BY id: SQLite then walked every
    object of the save in id order to spare sorting the few worlds (list_worlds says so too)."""
    worlds = WorldObject.objects.filter(type=ObjectType.WORLD).order_by()
    return sorted(worlds.values_list("id", flat=True))


def save_scoped_models() -> list:
    """Every model whose rows belong to a save (they carry the `game_save` column)."""
    found = []
    for model in apps.get_app_config("memory").get_models():
        if model._meta.proxy:
            continue
        if any(f.name == "game_save" for f in model._meta.local_fields):
            found.append(model)
    return found


def _delete_rows(save_id: int) -> dict[str, int]:
    """Every row of the save, table by table (omnia's children first, then ours)."""
    removed: dict[str, int] = {}
    tables = [*MIRRORED_TABLES]
    tables += [
        m._meta.db_table for m in save_scoped_models() if m._meta.db_table not in MIRRORED_TABLES
    ]
    with scoped_cursor(save_id) as cursor:
        for table in tables:
            cursor.execute(f"DELETE FROM {table} WHERE game_save_id = %(save)s")
            if cursor.rowcount:
                removed[table] = cursor.rowcount
    return removed


@dataclass(frozen=True)
class Deleted:
    name: str
    rows: dict[str, int]

    @property
    def total(self) -> int:
        return sum(self.rows.values())


def delete_save(name: str, *, actor=None) -> Deleted:
    """Remove a save and every row under it, in one transaction, with one audit row."""
    with transaction.atomic():
        # A write first: on SQLite it takes the write lock waiting its turn (a read first
        # fails "database is locked" at once when a follower commits in between); on
        # PostgreSQL it matches no row and takes nothing.
        Save.objects.filter(pk=-1).update(retired_at=F("retired_at"))
        save = Save.objects.select_for_update().filter(name=name, retired_at__isnull=True).first()
        if save is None:
            get_save(name)  # NotFound with the list of saves
        rows = _delete_rows(save.pk)
        Save.objects.filter(pk=save.pk).delete()
        audit.record(
            "save.delete",
            f"save:{name}",
            actor=actor,
            before={"name": name, "source": save.source_name, "sha256": save.source_sha256},
            after={"rows_deleted": rows},
        )
    return Deleted(name=name, rows=rows)


def retire(save: Save, replacement: Save) -> None:
    """Inside the replacing transaction: `replacement` takes the name, `save` is hidden and
    kept for RETIRED_GRACE (a reader that looked its save up before the swap reads on)."""
    name = save.name
    Save.objects.filter(pk=save.pk).update(
        name=f"{name}~retired-{save.pk}", retired_at=timezone.now()
    )
    Save.objects.filter(pk=replacement.pk).update(name=name)


def purge_retired(*, grace: timedelta = RETIRED_GRACE) -> int:
    """Delete the rows of saves retired longer than `grace` ago; returns how many saves."""
    cutoff = timezone.now() - grace
    purged = 0
    for save_id in Save.objects.filter(retired_at__lt=cutoff).values_list("pk", flat=True):
        with transaction.atomic():
            _delete_rows(save_id)
            Save.objects.filter(pk=save_id).delete()
        purged += 1
    return purged


def rename_conflict(name: str) -> Conflict:
    return Conflict(f"a save named {name!r} already exists", field="name")
