"""The follower's batch says what a cascade in the game's file removed (issue 30): omnia's
`repo.delete` of an entity takes its buffer and ledger rows with it (ON DELETE CASCADE)."""

from __future__ import annotations

import shutil
import sqlite3

import pytest

from memory.models import BufferEntry, LedgerEntry, WorldObject
from memory.worlds.live.follower import Follower
from tests.helpers import FIXTURES

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_cascaded_entity_deletion_is_reported_row_for_row(tmp_path, activate_save) -> None:
    game = tmp_path / "game.sqlite"
    shutil.copy(FIXTURES / "omnia-head-tavern.sqlite", game)
    follower = Follower(game, name="game")
    first = follower.tick()
    assert first is not None and first.added["buffer_entries"] == 30
    with sqlite3.connect(game) as conn:
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute("DELETE FROM objects WHERE id = 'charlie'")
    conn.close()
    result = follower.tick()
    assert result is not None
    assert result.deleted == {"buffer_entries": 8, "ledger_entries": 1, "objects": 1}
    assert result.summary() == "-8 buffer_entries, -1 ledger_entries, -1 objects, objects synced"
    activate_save("game")
    assert BufferEntry.objects.filter(owner_id="charlie").count() == 0
    assert LedgerEntry.objects.filter(owner_id="charlie").count() == 0
    assert not WorldObject.objects.filter(id="charlie").exists()
    assert BufferEntry.objects.count() == 22
