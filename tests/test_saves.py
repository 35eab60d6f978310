"""Saves: a replace is atomic for readers and for a killed importer; a store from before saves
migrates in place; every row of a deleted save goes and no other."""

from __future__ import annotations

import re
import signal
import sqlite3
import subprocess
import sys
import threading

import pytest
from django.db import connection
from django.test import Client

from memory.active_save import use
from memory.engine.saves import get_save, purge_retired
from memory.models import BufferEntry, Save, WorldObject
from memory.worlds.omnia_import import import_omnia
from tests.helpers import (
    FIXTURES,
    ROOT,
    big_world,
    env_for_test_db,
    table_rows,
    validator_up,
    wait_until,
)

V1 = FIXTURES / "omnia-74ffb45-tavern.sqlite"
V2 = FIXTURES / "omnia-head-tavern.sqlite"


def _view(name: str) -> tuple:
    """What a page of save `name` reads, in separate queries as a page does: the save looked
    up by name first, then bob's aliases, then bob's buffer ids."""
    save = get_save(name)
    with use(save):
        aliases = WorldObject.objects.get(id="bob").aliases_json
        ids = tuple(
            BufferEntry.objects.filter(owner_id="bob").order_by("id").values_list("id", flat=True)
        )
    return aliases, ids


def _page_view(client: Client, name: str) -> tuple:
    """What bob's viewer page of save `name` shows: each buffer line (entry id and text) and
    the targets of its alias table, in page order (status checked)."""
    response = client.get(f"/saves/{name}/viewers/bob/")
    assert response.status_code == 200, response.status_code
    page = response.content.decode()
    entries = tuple(
        re.findall(r'data-entry-id="([^"]*)".*?<span class="line[^"]*">(.*?)</span>', page, re.S)
    )
    rows = tuple(re.findall(r'<tr id="alias-[^"]*" data-target="([^"]*)"', page))
    return entries, rows


@pytest.mark.django_db(transaction=True)
def test_replace_under_a_concurrent_reader_never_shows_a_mix(django_user_model):
    if connection.vendor != "postgresql":
        pytest.skip("concurrent readers during a commit: PostgreSQL (SQLite serialises them)")
    user = django_user_model.objects.create_user("reader", password="pw", is_staff=True)
    client = Client()
    client.force_login(user)
    import_omnia(V2, as_name="probe")
    new_view = _view("probe"), _page_view(client, "probe")
    import_omnia(V1, as_name="tavern")
    old_view = _view("tavern"), _page_view(client, "tavern")
    assert old_view[0] != new_view[0]
    assert old_view[1][0] and old_view[1] != new_view[1]  # the page itself tells them apart
    seen: list[tuple] = []
    errors: list[BaseException] = []
    stop = threading.Event()

    def read() -> None:
        # A browser's loop: bob's viewer page, read through the whole stack, again and again,
        # with what the models hold for the same save beside it.
        reader = Client()
        reader.force_login(user)
        try:
            while not stop.is_set():
                seen.append((_view("tavern"), _page_view(reader, "tavern")))
        except BaseException as exc:  # reported below
            errors.append(exc)
        finally:
            connection.close()

    reader = threading.Thread(target=read)
    reader.start()
    try:
        # The reader has read the old file whole before the replace, and the new one after.
        assert wait_until(lambda: len(seen) >= 1 or errors, seconds=30), "the reader never read"
        import_omnia(V2, as_name="tavern", replace=True)
        assert wait_until(lambda: (seen and seen[-1] == new_view) or errors, seconds=30), (
            "the reader never saw the new file"
        )
    finally:
        stop.set()
        reader.join(30)
    assert errors == []
    # Each read whole, the old file or the new (the model read and the page are two reads: a
    # swap may fall between them, so each is checked on its own).
    for part in (0, 1):
        assert {s[part] for s in seen} <= {old_view[part], new_view[part]}, "a mix of two files"
    assert seen[0] == old_view and seen[-1] == new_view
    # The old save stays readable for the grace period, then goes.
    assert Save.objects.filter(retired_at__isnull=False).count() == 1
    assert purge_retired(grace=__import__("datetime").timedelta(0)) == 1
    assert Save.objects.filter(retired_at__isnull=False).count() == 0


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="signals a child process")
@pytest.mark.django_db(transaction=True)
def test_a_replace_killed_mid_import_leaves_the_old_save_intact(tmp_path):
    import_omnia(V1, as_name="tavern")
    before = table_rows()
    source = big_world(tmp_path / "big.sqlite", rows=200_000)
    importer = subprocess.Popen(
        [sys.executable, "manage.py", "import_omnia", str(source), "--as", "tavern", "--replace"],
        cwd=ROOT,
        env=env_for_test_db(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    # Kill it once its rows are going in (its validator helper starts with the first batch):
    # the new save's row exists inside its transaction, which no other connection can see.
    # A fixed sleep was not that: on a fast machine the import had committed by then.
    assert validator_up(importer), "the import ended before its rows went in"
    importer.send_signal(signal.SIGKILL)
    assert importer.wait(30) == -signal.SIGKILL  # killed mid-import, not finished
    assert table_rows() == before
    assert list(Save.objects.values_list("name", "source_name")) == [
        ("tavern", "omnia-74ffb45-tavern.sqlite")
    ]


@pytest.mark.terminal
def test_a_store_from_before_saves_migrates_in_place(tmp_path):
    """A store at 0015 (before saves) with a world written into it, migrated on in a child
    process: the world is a save named after its file, every row kept and readable."""
    db = tmp_path / "old.sqlite3"
    env = {**env_for_test_db(), "DATABASE_URL": f"sqlite:///{db}"}

    def manage(*args: str) -> str:
        done = subprocess.run(
            [sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True,
            text=True, timeout=120,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        return done.stdout

    manage("migrate", "memory", "0015", "-v0")
    conn = sqlite3.connect(db)
    conn.executescript(
        """
        INSERT INTO objects (id, type, world_id, aliases_json) VALUES
          ('w', 'world', NULL, NULL), ('ann', 'entity', 'w', '[["bo","the smith"]]'),
          ('bo', 'entity', 'w', NULL);
        INSERT INTO attributes (object_id, name, value, visibility)
          VALUES ('bo', 'name', 'Bo', 'PRIVATE');
        INSERT INTO buffer_entries (id, owner_id, timestamp, intent_json, created_at, shard)
          VALUES ('m1', 'ann', '2026-07-06T12:00:00.000Z', '{"type":"action","originalText":"x",
          "description":"waits","actorId":"ann","targetIds":[]}', 1, 0);
        INSERT INTO memory_world_sources (world_id, era, kind, source_path, source_sha256, name,
          imported_at) VALUES ('w', 'v1', 'sqlite', '/saves/run-1.sqlite', 'abc', '',
          CURRENT_TIMESTAMP);
        INSERT INTO memory_alias_changes (viewer_id, target_id, before, after, changed_at, source)
          VALUES ('ann', 'bo', NULL, 'the smith', CURRENT_TIMESTAMP, 'test');
        """
    )
    conn.commit()
    conn.close()
    manage("migrate", "-v0")
    conn = sqlite3.connect(db)
    rows = {
        table: conn.execute(sql).fetchall()
        for table, sql in {
            "saves": "SELECT id, name, era, kind, source_name, source_sha256, world_ids_json "
            "FROM memory_saves",
            "objects": "SELECT game_save_id, id, world_id FROM objects ORDER BY id",
            "attributes": "SELECT game_save_id, object_id, name, value FROM attributes",
            "buffer": "SELECT game_save_id, id, owner_id, created_at FROM buffer_entries",
            "alias changes": "SELECT game_save_id, viewer_id, after FROM memory_alias_changes",
        }.items()
    }
    conn.close()
    assert rows == {
        "saves": [(1, "run-1", "v1", "sqlite", "run-1.sqlite", "abc", '["w"]')],
        "objects": [(1, "ann", "w"), (1, "bo", "w"), (1, "w", None)],
        "attributes": [(1, "bo", "name", "Bo")],
        "buffer": [(1, "m1", "ann", 1)],
        "alias changes": [(1, "ann", "the smith")],
    }
    # and the inspector reads it: the migrated save renders as any other
    assert manage("render_buffer", "ann").strip() == "[12:00:00 PM] you waits"


def test_the_overview_counts_the_viewers_of_an_older_file_too(django_user_model):
    # omnia 74ffb45 wrote no is_agent column (NULL): its four entities all think. The head
    # file says so for four of its five (ale-barrel is no agent). Both as the save page lists.
    import_omnia(FIXTURES / "omnia-74ffb45-tavern.sqlite", as_name="old")
    import_omnia(FIXTURES / "omnia-head-tavern.sqlite", as_name="head")
    client = Client()
    client.force_login(django_user_model.objects.create_user("ann", is_staff=True))
    page = client.get("/").content.decode()
    counts = dict(
        re.findall(r'data-save="([^"]+)">.*?<dd class="viewer-count">(\d+)</dd>', page, re.S)
    )
    assert counts == {"head": "4", "old": "4"}
