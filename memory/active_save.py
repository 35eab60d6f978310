"""The active save: which playthrough a read or a write is about.

Two saves of one scenario hold the same ids, so every row carries its save and every query
must say which one. Every engine function works inside one save, so rather than thread a
save argument through all of them, a save is *active* for a stretch of code, the way Django
activates a time zone: `with use(save):`. The default manager of every save-scoped model
filters by it and refuses to run without one, so a query that forgot its save fails loudly
instead of mixing two playthroughs. Code that means every save says so: `Model.every_save`.

`use(SOLE)` is "the one save this database holds": the default of a command run without
`--save` (and of the tests). With two saves it refuses, naming them.

Below the models on purpose (memory/models/saves.py imports it for the managers and the column
default).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from django.db import connection, models


class NoActiveSave(RuntimeError):
    """A save-scoped query ran outside `use(save)`: a programming error, never user input."""


class AmbiguousSave(LookupError):
    """`use(SOLE)` with several saves (or none): the caller must name one."""

    def __init__(self, names: list[str]) -> None:
        self.names = names
        if names:
            message = f"{len(names)} saves hold worlds: {', '.join(names)}; choose one"
        else:
            message = "no save is loaded yet: import a world first"
        super().__init__(message)


class _Sole:
    """The marker for "the only save there is", resolved when a query needs it."""

    def __repr__(self) -> str:
        return "SOLE"


SOLE = _Sole()

_active: ContextVar[int | _Sole | None] = ContextVar("omnia_active_save", default=None)
# (generation of the save list, resolved id): SOLE is looked up once per change of saves.
_sole_cache: dict[str, tuple[int, int]] = {}
_saves_generation = [0]


def saves_changed() -> None:
    """A save was created, renamed or deleted: SOLE is resolved again on next use."""
    _saves_generation[0] += 1


def _resolve_sole() -> int:
    cached = _sole_cache.get("sole")
    if cached and cached[0] == _saves_generation[0]:
        return cached[1]
    from memory.models import Save  # here, not above: the models import this module

    rows = list(Save.objects.filter(retired_at__isnull=True).values_list("id", "name")[:50])
    if len(rows) != 1:
        raise AmbiguousSave(sorted(name for _id, name in rows))
    _sole_cache["sole"] = (_saves_generation[0], rows[0][0])
    return rows[0][0]


def current_id() -> int:
    """The active save's id; NoActiveSave outside `use()`, AmbiguousSave for SOLE with 2+."""
    value = _active.get()
    if value is None:
        raise NoActiveSave("no save is active: wrap the call in `with use(save):`")
    if value is SOLE:
        return _resolve_sole()
    return value


def active_id() -> int | None:
    """The active save's id, or None outside `use()` (never raises for a plain id)."""
    value = _active.get()
    if value is SOLE:
        try:
            return _resolve_sole()
        except AmbiguousSave:
            return None
    return value


@contextmanager
def use(save) -> Iterator[None]:
    """Make `save` (a Save, its id, or SOLE) the active save for the block; None: no save."""
    value = save if save is None or isinstance(save, int | _Sole) else save.pk
    token = _active.set(value)
    try:
        yield
    finally:
        _active.reset(token)


def activate(save) -> object:
    """`use()` without a block, for a request or a test: returns the token `deactivate` takes."""
    return _active.set(save if isinstance(save, int | _Sole) else save.pk)


def deactivate(token) -> None:
    _active.reset(token)


def plain_active_id() -> int | None:
    """The active save's id when it is known without a query (the column default: building
    an object in memory must not touch the database); None for SOLE not yet resolved, which
    the manager's create() and bulk_create() fill in."""
    value = _active.get()
    if value is SOLE:
        cached = _sole_cache.get("sole")
        return cached[1] if cached and cached[0] == _saves_generation[0] else None
    return value


class SaveScopedQuerySet(models.QuerySet):
    """Rows made through the manager land in the active save unless told otherwise."""

    def create(self, **kwargs):
        if kwargs.get("game_save") is None and kwargs.get("game_save_id") is None:
            kwargs.pop("game_save", None)
            kwargs["game_save_id"] = current_id()
        return super().create(**kwargs)

    def bulk_create(self, objs, *args, **kwargs):
        objs = list(objs)
        missing = [obj for obj in objs if obj.game_save_id is None]
        if missing:
            save_id = current_id()
            for obj in missing:
                obj.game_save_id = save_id
        return super().bulk_create(objs, *args, **kwargs)


class SaveScopedManager(models.Manager.from_queryset(SaveScopedQuerySet)):
    """The default manager of a save-scoped model: only the active save's rows."""

    def get_queryset(self):
        return super().get_queryset().filter(game_save_id=current_id())

    def in_save(self, save) -> SaveScopedQuerySet:
        """The rows of `save` (a Save or its id), whichever save is active: how code that
        spans saves reads one of them, by name (`every_save` is every save at once)."""
        save_id = save if isinstance(save, int) else save.pk
        return super().get_queryset().filter(game_save_id=save_id)


# Where a raw statement names its save: `WHERE game_save_id = %(save)s`. Only scoped_cursor
# fills it in; given to any other cursor it is a formatting error, never a query of every save.
SAVE = "%(save)s"
_SAVE_MARK = re.compile(re.escape(SAVE))


class ScopedCursor:
    """Django's cursor for raw SQL on save-scoped tables. Each statement names its save where
    `%(save)s` stands, and one that does not is refused before it reaches the database, so a
    raw statement cannot forget `game_save_id`. The id is written in as an integer literal:
    it is the database's own key, never input, and a million-row executemany carries one
    parameter fewer per row (PostgreSQL's driver interpolates parameters client-side anyway)."""

    def __init__(self, cursor, save_id: int) -> None:
        self._cursor = cursor
        self._save = str(int(save_id))

    def _bound(self, sql: str) -> str:
        bound, n = _SAVE_MARK.subn(self._save, sql)
        if not n:
            raise ValueError(f"raw SQL on a save-scoped table must name its save ({SAVE}): {sql}")
        return bound

    def execute(self, sql: str, params: Sequence[Any] | None = None) -> Any:
        return self._cursor.execute(self._bound(sql), params)

    def executemany(self, sql: str, param_list: Iterable[Sequence[Any]]) -> Any:
        return self._cursor.executemany(self._bound(sql), param_list)

    def __getattr__(self, name: str) -> Any:  # fetchone, fetchall, fetchmany, rowcount …
        return getattr(self._cursor, name)


@contextmanager
def scoped_cursor(save_id: int | None = None) -> Iterator[ScopedCursor]:
    """A cursor whose statements run in `save_id` (default: the active save)."""
    save = current_id() if save_id is None else save_id
    with connection.cursor() as cursor:
        yield ScopedCursor(cursor, save)
