"""A page's edit while another writer holds what it needs (issue 29 item 9): the live
follower commits a batch, the projection worker a cycle. The page waits its turn and answers.
On SQLite the other writer holds the one writer lock: before transactions began IMMEDIATE
the page's transaction, having read before the other committed, could not become the writer
at all (SQLITE_BUSY_SNAPSHOT, no busy timeout waits it out) and the page answered 503. On
PostgreSQL the other writer holds the row the edit changes."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable

import psycopg
import pytest
from django.db import connection

from memory.engine.knowledge import get_viewer

HX = {"HX-Request": "true"}


def _another_writer() -> tuple[Callable[[], object], Callable[[], object]]:
    """Another connection in the middle of a write the edit must wait for: (commit, close)."""
    db = connection.settings_dict
    if connection.vendor == "sqlite":
        other = sqlite3.connect(
            db["NAME"], timeout=0, isolation_level=None, check_same_thread=False
        )
        other.execute("BEGIN IMMEDIATE")  # the follower's batch, begun before the page's edit
        other.execute("UPDATE memory_saves SET kind = kind")
        return (lambda: other.execute("COMMIT")), other.close
    other = psycopg.connect(
        dbname=db["NAME"], user=db["USER"], host=db["HOST"], port=db["PORT"] or None
    )
    other.execute("UPDATE objects SET aliases_json = aliases_json WHERE id = 'alice'")
    return other.commit, other.close


@pytest.mark.django_db(transaction=True)
def test_an_alias_edit_waits_out_another_writer_and_lands(cast, editor_client) -> None:
    commit, close = _another_writer()
    committed = threading.Timer(0.5, commit)
    committed.start()
    try:
        response = editor_client.post(
            "/saves/cast/viewers/alice/aliases/bob/", {"label": "the smith"}, headers=HX
        )
    finally:
        committed.join()
        close()
    assert response.status_code == 200
    assert get_viewer("alice").aliases["bob"] == "the smith"
