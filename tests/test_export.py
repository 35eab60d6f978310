"""import → export → import is the identity on every mirrored table, for every fixture."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from django.core.management import call_command

from memory.models import WorldObject
from memory.web.services import set_alias
from memory.worlds.export import UnknownWorld, export_omnia
from memory.worlds.omnia_import import import_omnia
from tests.helpers import FIXTURES, table_rows

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
            rows = conn.execute(f"SELECT * FROM {table} ORDER BY rowid").fetchall()
            # Objects carry no order in the inspector; every other table keeps the file's.
            tables[table] = (
                sorted(rows)
                if table in {"objects", "attributes", "attribute_acl", "ledger_involved_entities"}
                else rows
            )
    columns = {t: [r[1] for r in conn.execute(f"PRAGMA table_info({t})")] for t in tables}
    conn.close()
    return {"rows": tables, "columns": columns}


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("name", "world"),
    [("omnia-74ffb45-tavern.sqlite", "tavern-world"), ("omnia-head-tavern.sqlite", "tavern-world")],
)
def test_export_omnia_round_trips_every_fixture(tmp_path, name, world):
    original = FIXTURES / name
    import_omnia(original)
    state = table_rows()
    exported = tmp_path / "exported.sqlite"
    export_omnia(world, exported)
    assert file_tables(exported) == file_tables(original)
    report = import_omnia(exported)
    assert report.counts["buffer_entries"] == 0
    # Only the record of where the world last came from may change.
    state.pop("memory_world_sources")
    after = table_rows()
    after.pop("memory_world_sources")
    assert after == state


@pytest.mark.django_db
def test_export_omnia_carries_an_edited_alias_back_to_the_game(tmp_path):
    import_omnia(FIXTURES / "omnia-74ffb45-tavern.sqlite")
    set_alias("alice", "bob", "Gareth", user=None, source="test")
    exported = tmp_path / "out.sqlite"
    call_command("export_omnia", str(exported))
    conn = sqlite3.connect(exported)
    assert conn.execute("SELECT aliases_json FROM objects WHERE id='alice'").fetchone() == (
        '[["bob","Gareth"],["charlie","the bartender"]]',
    )


@pytest.mark.django_db
def test_export_omnia_refuses_an_unknown_world(tmp_path):
    with pytest.raises(UnknownWorld, match="no world with id 'nowhere'"):
        export_omnia("nowhere", tmp_path / "x.sqlite")
    assert not (tmp_path / "x.sqlite").exists()
    assert WorldObject.objects.count() == 0
