"""import → export → import is the identity on every mirrored table, for every fixture."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import stat
from pathlib import Path

import pytest
from django.core.management import call_command

from memory.active_save import use
from memory.engine.saves import get_save
from memory.models import WorldObject
from memory.services import remember_memory, set_alias
from memory.worlds.export import UnknownWorld, export_omnia
from memory.worlds.omnia_import import import_omnia
from tests.helpers import FIXTURES

TABLES = (
    "objects",
    "attributes",
    "attribute_acl",
    "buffer_entries",
    "ledger_entries",
    "ledger_involved_entities",
)


def file_tables(path: Path) -> dict[str, list[tuple]]:
    conn = sqlite3.connect(path)
    present = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    tables = {}
    for table in TABLES:
        if table in present:
            # In rowid order: the order omnia reads them back in (loadWorldState has no ORDER BY).
            tables[table] = conn.execute(f"SELECT * FROM {table} ORDER BY rowid").fetchall()
    columns = {t: [r[1] for r in conn.execute(f"PRAGMA table_info({t})")] for t in tables}
    conn.close()
    return {"rows": tables, "columns": columns}


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("name", "world"),
    [("omnia-74ffb45-tavern.sqlite", "tavern-world"), ("omnia-head-tavern.sqlite", "tavern-world")],
)
def test_export_omnia_round_trips_every_fixture(tmp_path, name, world, activate_save):
    original = FIXTURES / name
    activate_save(import_omnia(original).save)
    exported = tmp_path / "exported.sqlite"
    export_omnia(world, exported)
    assert file_tables(exported) == file_tables(original)
    # The exported file is a save of its own beside the first; it writes back the same again.
    assert import_omnia(exported).save == "exported"
    again = tmp_path / "again.sqlite"
    with use(get_save("exported")):
        export_omnia(world, again)
    assert file_tables(again) == file_tables(original)


@pytest.mark.django_db
def test_export_omnia_carries_an_edited_alias_back_to_the_game(tmp_path, activate_save):
    activate_save(import_omnia(FIXTURES / "omnia-74ffb45-tavern.sqlite").save)
    set_alias("alice", "bob", "Gareth", user=None, source="test")
    exported = tmp_path / "out.sqlite"
    call_command("export_omnia", str(exported))
    conn = sqlite3.connect(exported)
    assert conn.execute("SELECT aliases_json FROM objects WHERE id='alice'").fetchone() == (
        '[["bob","Gareth"],["charlie","the bartender"]]',
    )


@pytest.mark.django_db
def test_export_omnia_refuses_an_unknown_world(tmp_path, save):
    with pytest.raises(UnknownWorld, match="no world with id 'nowhere'"):
        export_omnia("nowhere", tmp_path / "x.sqlite")
    assert not (tmp_path / "x.sqlite").exists()
    assert WorldObject.objects.count() == 0


def rows_in_rowid_order(path: Path, table: str) -> list[tuple]:
    conn = sqlite3.connect(path)
    try:
        return conn.execute(f"SELECT * FROM {table} ORDER BY rowid").fetchall()
    finally:
        conn.close()


V1_TABLES = TABLES[:4]


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("name", "table"),
    [("omnia-74ffb45-tavern.sqlite", t) for t in V1_TABLES]
    + [("omnia-head-tavern.sqlite", t) for t in TABLES],
)
def test_export_omnia_keeps_the_files_row_order(tmp_path, name, table):
    original = FIXTURES / name
    call_command("import_omnia", str(original))
    exported = tmp_path / "out.sqlite"
    call_command("export_omnia", str(exported))
    want = rows_in_rowid_order(original, table)
    got = rows_in_rowid_order(exported, table)
    assert got == want
    # The fixtures' own order is not the id order here, so a sorted export could not pass.
    if table in ("objects", "attributes", "attribute_acl"):
        assert want != sorted(want)


@pytest.mark.django_db
def test_export_omnia_keeps_a_reversed_files_order_in_every_table(tmp_path):
    """The fixtures' ledger rows happen to be in id order: a copy with every table's rows
    rewritten backwards proves the order comes from the file, not from the ids."""
    reversed_copy = tmp_path / "reversed.sqlite"
    shutil.copy(FIXTURES / "omnia-head-tavern.sqlite", reversed_copy)
    conn = sqlite3.connect(reversed_copy)
    for table in TABLES:
        rows = conn.execute(f"SELECT * FROM {table} ORDER BY rowid DESC").fetchall()
        conn.execute(f"DELETE FROM {table}")
        marks = ", ".join("?" * len(rows[0]))
        conn.executemany(f"INSERT INTO {table} VALUES ({marks})", rows)
    conn.commit()
    conn.close()
    call_command("import_omnia", str(reversed_copy))
    exported = tmp_path / "out.sqlite"
    call_command("export_omnia", str(exported))
    for table in TABLES:
        want = rows_in_rowid_order(reversed_copy, table)
        assert rows_in_rowid_order(exported, table) == want, table
        assert want != sorted(want), table


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("umask", "mode"), [(0o022, 0o644), (0o002, 0o644), (0o027, 0o640), (0o077, 0o600)]
)
def test_export_omnia_new_file_takes_sqlites_mode_under_the_umask(tmp_path, umask, mode):
    # better-sqlite3 creates omnia's files with SQLite's 0644 less the umask (issue 30): 0644
    # under 002 too (never 0664), 0600 under 077.
    call_command("import_omnia", str(FIXTURES / "omnia-head-tavern.sqlite"))
    exported = tmp_path / "out.sqlite"
    before = os.umask(umask)
    try:
        call_command("export_omnia", str(exported))
    finally:
        os.umask(before)
    assert stat.S_IMODE(exported.stat().st_mode) == mode
    assert [p.name for p in tmp_path.iterdir()] == ["out.sqlite"]  # no temp file left behind


@pytest.mark.django_db
def test_export_omnia_adds_inspector_writes_without_reordering(tmp_path, activate_save):
    original = FIXTURES / "omnia-head-tavern.sqlite"
    call_command("import_omnia", str(original))
    activate_save("omnia-head-tavern")
    set_alias("alice", "bob", "Gareth", user=None, source="test")
    done = remember_memory(
        "bob",
        intent={
            "type": "action",
            "content": "entity@bob[I] lock the cellar door",
            "actorId": "bob",
            "targetIds": [],
            "modifiers": [],
        },
        timestamp="2026-07-06T10:00:00.000Z",
        location_id="cellar",
    )
    exported = tmp_path / "out.sqlite"
    call_command("export_omnia", str(exported))

    objects = rows_in_rowid_order(original, "objects")
    alice = next(i for i, row in enumerate(objects) if row[0] == "alice")
    aliases = json.loads(objects[alice][5])
    edited = json.dumps(
        [[t, "Gareth" if t == "bob" else label] for t, label in aliases], separators=(",", ":")
    )
    objects[alice] = (*objects[alice][:5], edited, *objects[alice][6:])
    assert rows_in_rowid_order(exported, "objects") == objects
    assert json.loads(edited) != aliases

    buffer = rows_in_rowid_order(exported, "buffer_entries")
    assert buffer[:-1] == rows_in_rowid_order(original, "buffer_entries")
    assert buffer[-1] == (
        done.entry.id,
        "bob",
        "2026-07-06T10:00:00.000Z",
        "cellar",
        done.entry.intent_json,
        None,
        0,
    )
    for table in ("attributes", "attribute_acl", "ledger_entries", "ledger_involved_entities"):
        assert rows_in_rowid_order(exported, table) == rows_in_rowid_order(original, table)


@pytest.mark.django_db
def test_export_omnia_over_an_existing_file_keeps_its_mode(tmp_path):
    original = FIXTURES / "omnia-head-tavern.sqlite"
    call_command("import_omnia", str(original))
    exported = tmp_path / "out.sqlite"
    exported.write_bytes(b"")
    exported.chmod(0o600)
    call_command("export_omnia", str(exported), "--force")
    assert stat.S_IMODE(exported.stat().st_mode) == 0o600
    assert file_tables(exported) == file_tables(original)


@pytest.mark.django_db
def test_an_alias_edit_rewrites_the_entitys_acl_rows_as_saveentity_does(tmp_path, activate_save):
    """omnia saves a changed alias map with `saveEntity`, which deletes each attribute's ACL
    rows and inserts them again: bob's three rows move after everyone else's, in the order of
    his attributes, each attribute's allowed ids in the order they were."""
    activate_save(import_omnia(FIXTURES / "omnia-head-tavern.sqlite").save)
    set_alias("bob", "alice", "the lost girl", user=None, source="test")
    exported = tmp_path / "out.sqlite"
    call_command("export_omnia", str(exported))
    guard = "97ef4a4a-a324-439f-be1d-a8da93557886"
    assert sqlite3.connect(exported).execute(
        "SELECT object_id, attribute_name, entity_id FROM attribute_acl ORDER BY rowid"
    ).fetchall() == [
        ("tavern-world", "smuggling_route", "bob"),
        ("tavern-world", "smuggling_route", "charlie"),
        (guard, "orders", "bob"),
        (guard, "orders", "captain-voss"),
        ("bob", "true_name", "charlie"),
        ("bob", "weapon", guard),
        ("bob", "weapon", "charlie"),
    ]
