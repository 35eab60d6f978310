"""The active save: which playthrough a read or a write is about.

Two saves of one scenario hold the same ids, so every row carries its save and every query
must say which one. Every engine function works inside one save, so rather than thread a
save argument through all of them, a save is *active* for a stretch of code, the way Django
activates a time zone: `with use(save):`. The default manager of every save-scoped model
filters by it and refuses to run without one, so a query that forgot its save fails loudly
instead of mixing two playthroughs. Code that means every save says so: `Model.every_save`;
code that spans saves reads one of them by name: `Model.objects.in_save(save)`.

Only the edges activate a save, each by name: a page or API operation from its URL
(memory/web/saves.py), a command from --save once before it runs (management/commands/
_base.py), a test from the world its fixture made. Nothing here guesses one.

Below the models on purpose: memory/models/saves.py imports it for the managers and the
column default, and it imports no model (it holds the Save it is given, never looks one up).
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


# The Save itself, not its id: a page's links need its name, and one holder means the id the
# queries filter by and the name the links carry cannot disagree.
_active: ContextVar[models.Model | None] = ContextVar("omnia_active_save", default=None)


def current_save() -> models.Model:
    """The active Save; NoActiveSave outside `use()`."""
    save = _active.get()
    if save is None:
        raise NoActiveSave("no save is active: wrap the call in `with use(save):`")
    return save


def current_id() -> int:
    """The active save's id; NoActiveSave outside `use()`."""
    return current_save().pk


def plain_active_id() -> int | None:
    """The active save's id, or None outside `use()` (the column default: building an object
    in memory must not raise; the manager's create() and bulk_create() refuse instead)."""
    save = _active.get()
    return None if save is None else save.pk


def _checked(save: models.Model | None) -> models.Model | None:
    if save is not None and not isinstance(save, models.Model):
        raise TypeError(f"activate a Save, not {type(save).__name__} {save!r}")
    return save


@contextmanager
def use(save: models.Model | None) -> Iterator[None]:
    """Make `save` (a Save) the active save for the block; None: no save is active."""
    token = _active.set(_checked(save))
    try:
        yield
    finally:
        _active.reset(token)


def activate(save: models.Model | None) -> object:
    """`use()` without a block, for a test: returns the token `deactivate` takes."""
    return _active.set(_checked(save))


def deactivate(token) -> None:
    _active.reset(token)


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


# Scoped base queries a manager keeps (one per save it has served): past this many, it starts
# over, so a process that walks through many saves holds no more than this.
SCOPED_QUERIES_KEPT = 64


class SaveScopedManager(models.Manager.from_queryset(SaveScopedQuerySet)):
    """The default manager of a save-scoped model: only the active save's rows.

    Each save's base query (`game_save_id = <id>`) is built once and copied for every
    queryset after: building the filter cost 40 microseconds a queryset, copying it 4, and
    a page makes a few dozen. Django copies a queryset's query before changing it, so the
    kept one is never changed."""

    def get_queryset(self):
        return self._scoped(current_id())

    def in_save(self, save) -> SaveScopedQuerySet:
        """The rows of `save` (a Save or its id), whichever save is active: how code that
        spans saves reads one of them, by name (`every_save` is every save at once)."""
        return self._scoped(save if isinstance(save, int) else save.pk)

    def _scoped(self, save_id: int) -> SaveScopedQuerySet:
        # Keyed by the model too: a manager copied to another model (Django copies inherited
        # ones) must not hand out its original's queries.
        kept = self.__dict__.setdefault("_scoped_queries", {})
        query = kept.get((self.model, save_id))
        if query is None:
            if len(kept) >= SCOPED_QUERIES_KEPT:
                kept.clear()
            query = super().get_queryset().filter(game_save_id=save_id).query
            kept[self.model, save_id] = query
        return self._queryset_class(
            model=self.model, query=query.chain(), using=self._db, hints=self._hints
        )


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

    def insert_rows(
        self, table: str, columns: Sequence[str], rows: Iterable[Sequence[Any]]
    ) -> None:
        """Plain INSERTs of many rows into `table` in this save (no conflict handling: the
        rows are known new, as a rebuild's are). On PostgreSQL one COPY stream: executemany
        there is a statement per row through the pipeline, and it was half of a 300k-row
        rebuild (issue 25); SQLite's executemany is already one prepared statement."""
        if connection.vendor == "postgresql":
            names = ", ".join(("game_save_id", *columns))
            with self._cursor.copy(f"COPY {table} ({names}) FROM STDIN") as copy:
                save = int(self._save)
                for row in rows:
                    copy.write_row((save, *row))
            return
        marks = ", ".join(["%s"] * len(columns))
        self.executemany(
            f"INSERT INTO {table} (game_save_id, {', '.join(columns)}) VALUES ({SAVE}, {marks})",
            rows,
        )

    def __getattr__(self, name: str) -> Any:  # fetchone, fetchall, fetchmany, rowcount …
        return getattr(self._cursor, name)


@contextmanager
def scoped_cursor(save_id: int | None = None) -> Iterator[ScopedCursor]:
    """A cursor whose statements run in `save_id` (default: the active save)."""
    save = current_id() if save_id is None else save_id
    with connection.cursor() as cursor:
        yield ScopedCursor(cursor, save)


def among(column: str, values: Sequence[Any]) -> tuple[str, list[Any]]:
    """`column` equal to one of `values`, as SQL and its parameters: on PostgreSQL one array
    (`= ANY(%s)`), since psycopg binds parameters in Python, one by one, and a viewer page's
    lists are hundreds long (the 299 labels of a viewer: 0.78 ms as an IN list, 0.47 as an
    array); on SQLite an IN list, which it binds in C. An empty list matches nothing."""
    if connection.vendor == "postgresql":
        values = list(values)
        if all(type(v) is str for v in values):
            return f"{column} = ANY(%s::text[])", [text_array(values)]
        return f"{column} = ANY(%s)", [values]
    return f"{column} IN ({', '.join(['%s'] * len(values))})", list(values)


def text_array(values: Iterable[str]) -> str:
    """PostgreSQL's literal of a text[] holding these strings, each quoted (a backslash or a
    double quote inside escaped): what psycopg's list dumper writes, made here at a quarter of
    its cost (0.11 against 0.03 ms for a viewer's 300 labels, and a viewer page passes a dozen
    such lists)."""
    quoted = ['"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"' for v in values]
    return "{" + ",".join(quoted) + "}"


def containing(column: str, text: str) -> tuple[str, tuple]:
    """`column` holding `text`, as SQL and its parameter: what the ORM's `__contains` writes
    on this database (its LIKE operator, and `text`'s wildcards escaped)."""
    like = connection.operators["contains"] % "%s"
    return f"{column} {like}", (f"%{connection.ops.prep_for_like_query(text)}%",)


def scoped_rows(sql: str, params: Sequence[Any]) -> list[tuple]:
    """Every row of one raw statement on the active save (`%(save)s` in it)."""
    with scoped_cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


def converted_rows(
    model: type[models.Model], fields: Sequence[str], rows: Iterable[Sequence[Any]]
) -> list[tuple]:
    """Raw rows of `model`'s columns `fields` (attribute names, in that order), each value
    converted as the ORM's compiler converts it on a read (SQLite's text datetimes and 0/1
    booleans): what `values_list(*fields)` gives for the same rows."""
    converters = []
    for i, name in enumerate(fields):
        field = model._meta.get_field(name)
        column = field.get_col(model._meta.db_table)
        found = connection.ops.get_db_converters(column) + field.get_db_converters(connection)
        if found:
            converters.append((i, column, found))
    if not converters:
        return [tuple(row) for row in rows]
    out = []
    for row in rows:
        row = list(row)
        for i, column, functions in converters:
            for convert in functions:
                row[i] = convert(row[i], column, connection)
        out.append(tuple(row))
    return out


def _columns(model: type[models.Model], fields: Sequence[str] | None) -> tuple[list[str], str]:
    """The attribute names a read makes instances of (`fields` and the key; every concrete
    field without them) and their columns, as a SELECT lists them."""
    meta = model._meta
    wanted = None if fields is None else {meta.pk.attname, *fields}
    names = [f.attname for f in meta.concrete_fields if wanted is None or f.attname in wanted]
    return names, ", ".join(meta.get_field(n).column for n in names)


def scoped_instances(
    model: type[models.Model],
    condition: str = "",
    params: Sequence[Any] = (),
    fields: Sequence[str] | None = None,
) -> list[models.Model]:
    """The rows of `model`'s table in the active save that meet `condition` (raw SQL, with its
    ORDER BY and LIMIT if any; every row without one), as instances: its `fields` (attribute
    names; the key always, the rest deferred as `.only` leaves them), each value converted as
    the ORM converts it. What a queryset gives, without the ORM building the statement on each
    call: one entity read through a queryset took 0.98 ms on PostgreSQL and 0.60 on SQLite,
    this way 0.44 and 0.15 (the building, not the database); a page makes several a request."""
    names, columns = _columns(model, fields)
    sql = (
        f"SELECT {columns} FROM {model._meta.db_table} "
        f"WHERE game_save_id = {SAVE}{f' AND {condition}' if condition else ''}"
    )
    return as_instances(model, names, scoped_rows(sql, params))


def instances(
    model: type[models.Model],
    condition: str,
    params: Sequence[Any] = (),
    fields: Sequence[str] | None = None,
) -> list[models.Model]:
    """scoped_instances of a table that is no save's (the saves, the accounts, the sessions):
    what every request reads first, raw for the same reason."""
    names, columns = _columns(model, fields)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {columns} FROM {model._meta.db_table} WHERE {condition}", params)
        return as_instances(model, names, cursor.fetchall())


def as_instances(
    model: type[models.Model], names: Sequence[str], rows: Iterable[Sequence[Any]]
) -> list[models.Model]:
    """Raw rows of `model`'s columns `names` (attribute names) as its instances, converted
    as a queryset's are (converted_rows)."""
    return [
        model.from_db(connection.alias, names, row) for row in converted_rows(model, names, rows)
    ]
