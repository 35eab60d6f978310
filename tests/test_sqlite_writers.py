"""A page's write while another process holds SQLite's write lock (issue 29 item 9): the live
follower commits a batch, the projection worker a cycle. The page waits its turn (the busy
timeout) and answers; it never answers 503 because its transaction read before the other
committed and SQLite refuses to let a stale reader become the writer (SQLITE_BUSY_SNAPSHOT)."""

from __future__ import annotations

import sqlite3
import threading

import pytest
from django.db import connection

from memory.engine.knowledge import get_viewer

HX = {"HX-Request": "true"}


@pytest.mark.django_db(transaction=True)
def test_an_alias_edit_waits_out_another_writer_and_lands(cast, editor_client) -> None:
    if connection.vendor != "sqlite":
        pytest.skip("SQLite's one writer lock; PostgreSQL locks rows")
    other = sqlite3.connect(
        connection.settings_dict["NAME"], timeout=0, isolation_level=None, check_same_thread=False
    )
    other.execute("BEGIN IMMEDIATE")  # the follower's batch, begun before the page's edit
    other.execute("UPDATE memory_saves SET kind = kind")
    committed = threading.Timer(0.5, other.execute, ["COMMIT"])
    committed.start()
    try:
        response = editor_client.post(
            "/saves/cast/viewers/alice/aliases/bob/", {"label": "the smith"}, headers=HX
        )
    finally:
        committed.join()
        other.close()
    assert response.status_code == 200
    assert get_viewer("alice").aliases["bob"] == "the smith"
