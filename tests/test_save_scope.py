"""The save scope at its edges (issue 26, item 1): every raw statement on a save-scoped table
names its save through the one helper that writes it (memory.active_save.scoped_cursor)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from memory.active_save import SAVE, ScopedCursor
from memory.selectors.saves import _YEAR_ENDS
from memory.selectors.triage import _PAGE_READ

ROOT = Path(__file__).resolve().parent.parent

# A string is a statement when it starts like one (fragments such as " AND …" are appended to
# a statement that is checked on its own).
_STATEMENT = re.compile(r"^\s*(SELECT|INSERT\s+INTO|UPDATE|DELETE\s+FROM|WITH)\s", re.S)
# The tables a statement reads or writes: a name after FROM/INTO/UPDATE/JOIN, or an f-string
# slot there (`{table}`, `{Model._meta.db_table}`), which could be any table.
_TABLE = re.compile(r"\b(?:FROM|INTO|UPDATE|JOIN)\s+(\{[^}]*\}|\w+)")
# Statements that touch save-scoped tables across every save on purpose, each with its why.
ACROSS_SAVES = {
    ("memory/worlds/bulk.py", "SELECT 1 FROM {table} LIMIT 1"): (
        "whether the table is empty in every save: only then does a first import drop and "
        "rebuild its secondary indexes"
    ),
    ("memory/engine/text_index.py", "SELECT coalesce(max(uid), 0) FROM buffer_entries"): (
        "the largest rowid of the table: a bulk door indexes the rows past it (rowids are "
        "the table's, not a save's)"
    ),
    ("memory/selectors/saves.py", _YEAR_ENDS): (
        "the first and last stamp of each save a page shows (the overview's: every save), "
        "each save named by its id"
    ),
    ("memory/selectors/triage.py", _PAGE_READ): (
        "the triage queue's first page lists the findings of every live save, each save "
        "named by its id"
    ),
}


def _save_scoped_tables() -> set[str]:
    from memory.engine.saves import MIRRORED_TABLES, save_scoped_models

    return {m._meta.db_table for m in save_scoped_models()} | set(MIRRORED_TABLES)


def _text(node: ast.AST) -> str | None:
    """A string literal's text, an f-string's slots written as `{source}`."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        parts = []
        for value in node.values:
            if isinstance(value, ast.Constant):
                parts.append(str(value.value))
            else:
                parts.append("{" + ast.unparse(value.value) + "}")
        return "".join(parts)
    return None


def _docstrings(tree: ast.AST) -> set[int]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and _text(body[0].value) is not None:
                found.add(id(body[0].value))
    return found


# What a module that reads or writes a game's file imports: its SQL goes to that file.
GAME_FILE_DOORS = {"sqlite3", "memory.worlds.live.source"}


def _reads_game_files(tree: ast.AST) -> bool:
    for node in ast.walk(tree):
        if isinstance(node, ast.Import) and any(a.name in GAME_FILE_DOORS for a in node.names):
            return True
        if isinstance(node, ast.ImportFrom) and node.module in GAME_FILE_DOORS:
            return True
    return False


def _statements() -> list[tuple[str, str]]:
    """(module, statement) for every raw SQL statement written in memory/ (not migrations),
    but those a module that reads or writes a game's file sends to that file."""
    found = []
    for path in sorted((ROOT / "memory").rglob("*.py")):
        if "migrations" in path.parts or path.name == "active_save.py":
            continue
        module = path.relative_to(ROOT).as_posix()
        tree = ast.parse(path.read_text(encoding="utf-8"))
        if _reads_game_files(tree):
            continue
        skip = _docstrings(tree)  # and the pieces of an f-string, read whole below
        skip |= {id(v) for n in ast.walk(tree) if isinstance(n, ast.JoinedStr) for v in n.values}
        for node in ast.walk(tree):
            if id(node) in skip:
                continue
            text = _text(node)
            if text and _STATEMENT.match(text):
                found.append((module, text))
    return found


def test_modules_that_read_game_files_never_touch_the_inspector_database_raw() -> None:
    """SQL in a module that reads or writes a game's file goes to that file (its tables share
    omnia's names, without a save column): such a module opens no cursor on Django's database."""
    touching = []
    for path in sorted((ROOT / "memory").rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        if "migrations" in path.parts or not _reads_game_files(ast.parse(text)):
            continue
        if re.search(r"\bconnection\.cursor\(|\bscoped_cursor\b|\bconnections\[", text):
            touching.append(path.relative_to(ROOT).as_posix())
    assert touching == []


def test_every_raw_statement_on_a_save_scoped_table_names_its_save() -> None:
    scoped = _save_scoped_tables()
    statements = _statements()
    unnamed = []
    for module, sql in statements:
        tables = _TABLE.findall(sql)
        if not any(t in scoped or t.startswith("{") for t in tables):
            continue
        if SAVE not in sql and (module, sql) not in ACROSS_SAVES:
            unnamed.append((module, sql))
    assert unnamed == []
    # The check sees the statements it is about (a parse that found none would pass).
    modules = {module for module, _sql in statements}
    assert {"memory/worlds/bulk.py", "memory/engine/projections/rows.py"} <= modules
    assert set(ACROSS_SAVES) <= set(statements)


def test_a_raw_statement_that_does_not_name_its_save_is_refused() -> None:
    class Recorder:
        def __init__(self) -> None:
            self.sent: list[tuple] = []

        def execute(self, sql, params=None):
            self.sent.append((sql, params))

    recorder = Recorder()
    cursor = ScopedCursor(recorder, 7)
    cursor.execute("SELECT id FROM buffer_entries WHERE game_save_id = %(save)s AND id = %s", [1])
    with pytest.raises(ValueError, match="must name its save"):
        cursor.execute("SELECT id FROM buffer_entries WHERE id = %s", [1])
    assert recorder.sent == [
        ("SELECT id FROM buffer_entries WHERE game_save_id = 7 AND id = %s", [1])
    ]


def test_a_rebuild_leaves_each_shard_at_its_own_saves_last_row(two_eras) -> None:
    """The rebuild's watermark read was the one raw statement without its save: a shard of
    the older save was left at the newer save's last row."""
    from memory.active_save import use
    from memory.engine.projections import rebuild
    from memory.engine.saves import get_save
    from memory.models import BufferEntry, ProjectionShard
    from tests.helpers import TAVERN_V1

    with use(get_save(TAVERN_V1)):
        rebuild()
        marks = dict(ProjectionShard.objects.values_list("shard", "last_created_at"))
        last = {
            shard: BufferEntry.objects.filter(shard=shard)
            .order_by("-created_at")
            .values_list("created_at", flat=True)
            .first()
            or 0
            for shard in marks
        }
    assert marks == last
    assert any(marks.values())


def test_a_command_works_in_the_saves_it_resolved_never_its_callers(db) -> None:
    """run_projections without --save folds every save, whichever save the caller (a test, a
    shell) has active; with --save, that save alone."""
    from io import StringIO

    from django.core.management import call_command

    from memory.active_save import use
    from memory.engine.projections.worker import projection_status
    from memory.engine.saves import get_save
    from memory.worlds.omnia_import import import_omnia
    from tests.helpers import FIXTURES, TAVERN_V1, TAVERN_V2

    for name in (TAVERN_V1, TAVERN_V2):
        import_omnia(FIXTURES / f"{name}.sqlite")
    v1, v2 = get_save(TAVERN_V1), get_save(TAVERN_V2)

    def lag() -> tuple[int, int]:
        with use(v1):
            a = projection_status()["lag_rows"]
        with use(v2):
            b = projection_status()["lag_rows"]
        return a, b

    before = lag()
    assert all(before)
    with use(v1):
        call_command("run_projections", save=TAVERN_V2, stdout=StringIO())
    assert lag() == (before[0], 0)
    with use(v2):
        call_command("run_projections", stdout=StringIO())
    assert lag() == (0, 0)


# Filtering every save down to one by hand: what `Model.objects.in_save(save)` says.
_ONE_SAVE_BY_HAND = {"game_save", "game_save_id", "game_save__pk", "game_save__name"}


def _chain(node: ast.AST) -> list[str]:
    names = []
    while isinstance(node, ast.Attribute | ast.Call):
        if isinstance(node, ast.Attribute):
            names.append(node.attr)
            node = node.value
        else:
            node = node.func
    return names


def _correlated(value: ast.AST) -> bool:
    """`game_save_id=OuterRef("game_save_id")`: a subquery matched to its outer row's save
    (the leak triage queue, the admin's true-name column over every save), which is no save
    chosen by hand."""
    return (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Name)
        and value.func.id == "OuterRef"
    )


def test_code_that_spans_saves_reads_one_with_in_save_never_every_save_filtered() -> None:
    found = []
    for path in sorted((ROOT / "memory").rglob("*.py")):
        if "migrations" in path.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call) or "every_save" not in _chain(node.func):
                continue
            if any(k.arg in _ONE_SAVE_BY_HAND and not _correlated(k.value) for k in node.keywords):
                found.append(f"{path.relative_to(ROOT).as_posix()}:{node.lineno}")
    assert found == []


def test_in_save_reads_the_named_save_whichever_is_active(two_eras) -> None:
    from memory.active_save import use
    from memory.engine.saves import get_save
    from memory.models import BufferEntry
    from tests.helpers import TAVERN_V1, TAVERN_V2

    v1, v2 = get_save(TAVERN_V1), get_save(TAVERN_V2)
    with use(v1):
        ids_v1 = set(BufferEntry.objects.values_list("id", flat=True))
    with use(v2):
        ids_v2 = set(BufferEntry.objects.values_list("id", flat=True))
        assert set(BufferEntry.objects.in_save(v1).values_list("id", flat=True)) == ids_v1
    assert set(BufferEntry.objects.in_save(v2.pk).values_list("id", flat=True)) == ids_v2
    assert ids_v1 != ids_v2


def test_each_queryset_copies_the_saves_kept_query_and_changes_only_its_copy(two_eras) -> None:
    """The manager keeps each save's scoped base query and hands out copies (active_save.py):
    a queryset changed in place, as Django's own internals change theirs, leaves the next
    queryset of that save as it was, and each save keeps its own."""
    from django.db.models import Q

    from memory.active_save import use
    from memory.engine.saves import get_save
    from memory.models import BufferEntry
    from tests.helpers import TAVERN_V1, TAVERN_V2

    v1, v2 = get_save(TAVERN_V1), get_save(TAVERN_V2)
    with use(v1):
        every = BufferEntry.objects.count()
        changed = BufferEntry.objects.all()
        changed.query.add_q(Q(id="no such row"))  # in place, on this queryset's copy
        assert changed.count() == 0
        assert BufferEntry.objects.count() == every > 0
        # Another save's rows, read by name while this one is active, and back again.
        assert (
            BufferEntry.objects.in_save(v2).count()
            == BufferEntry.every_save.filter(game_save_id=v2.pk).count()
        )
        assert BufferEntry.objects.count() == every
    with use(v2):
        assert set(BufferEntry.objects.values_list("game_save_id", flat=True)) == {v2.pk}


def test_each_save_runs_its_work_in_the_save_and_the_loop_body_outside_it(two_eras) -> None:
    from memory.active_save import plain_active_id
    from memory.engine.saves import each_save

    seen = []
    for save, inside in each_save(lambda s: plain_active_id()):
        seen.append((save.name, inside == save.pk, plain_active_id()))
    assert [(name, ok) for name, ok, _ in seen] == [
        ("omnia-74ffb45-tavern", True),
        ("omnia-head-tavern", True),
    ]
    assert {outside for _, _, outside in seen} == {None}


def test_a_bare_save_scoped_query_raises(cast) -> None:
    """Outside every save (no fixture's, no page's, no command's), a save-scoped query refuses
    to run, even with one save in the database: nothing reads "the only save"."""
    from memory.active_save import NoActiveSave, plain_active_id, use
    from memory.models import BufferEntry, Save, WorldObject

    assert WorldObject.objects.count() == 4  # inside cast's save, active for the test
    assert Save.objects.count() == 1
    with use(None):
        assert plain_active_id() is None
        with pytest.raises(NoActiveSave):
            WorldObject.objects.count()
        with pytest.raises(NoActiveSave):
            BufferEntry.objects.create(id="x", owner_id="alice", timestamp="t", intent_json="{}")
        with pytest.raises(NoActiveSave):
            list(WorldObject.objects.filter(id="alice"))
    assert BufferEntry.every_save.filter(id="x").count() == 0


def test_a_test_without_a_world_has_no_save_active() -> None:
    from memory.active_save import plain_active_id

    assert plain_active_id() is None


# --- every route under a save runs inside it -------------------------------------------------

# Routes that name a save but look it up themselves: the save's own record, beside the list
# of saves (GET /api/saves/{save} reads its provenance, DELETE removes it), not its rows.
LOOK_UP_THEIR_SAVE = {"api:save", "api:save_delete"}


def _routes(resolver=None, prefix: str = "", namespace: str = ""):
    from django.urls import URLResolver, get_resolver

    for pattern in (resolver or get_resolver()).url_patterns:
        route = prefix + str(pattern.pattern)
        if isinstance(pattern, URLResolver):
            inner = f"{namespace}{pattern.namespace}:" if pattern.namespace else namespace
            yield from _routes(pattern, route, inner)
        else:
            yield route, f"{namespace}{pattern.name}", pattern.callback


def _api_operations(callback) -> list:
    """The operations behind one of ninja's URL patterns (its PathView, in the closure)."""
    from inspect import getclosurevars

    path_view = getclosurevars(callback).nonlocals["self"]
    return list(path_view.operations)


def test_every_route_under_a_save_runs_inside_it_and_no_other_does() -> None:
    from memory.web.saves import in_save, in_save_operation, in_save_run

    pages, operations, unbound, others = [], [], [], []
    for route, name, callback in _routes():
        under_save = "<save>" in route or "<str:save>" in route
        if not under_save:
            if getattr(callback, "bound_by", None) is not None:
                others.append(name)
            continue
        if name in LOOK_UP_THEIR_SAVE:
            continue
        if route.startswith("api/"):
            for operation in _api_operations(callback):
                bound = (
                    getattr(operation.run, "bound_by", None),
                    getattr(operation.view_func, "bound_by", None),
                )
                operations.append(name)
                if bound != (in_save_run, in_save_operation):
                    unbound.append((name, bound))
        else:
            pages.append(name)
            if getattr(callback, "bound_by", None) is not in_save:
                unbound.append((name, None))
    assert unbound == []
    assert others == []
    # The walk reached both doors (a resolver that yielded nothing would pass).
    assert {"memory:viewer", "memory:leaks_csv", "memory:entry"} <= set(pages)
    assert {"api:buffer", "api:alias_set", "api:problems"} <= set(operations)
    assert LOOK_UP_THEIR_SAVE.issubset(name for _route, name, _cb in _routes())
