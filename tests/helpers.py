"""Plain helpers shared by several test modules (test modules never import each other).

Writing through the real door, snapshotting projection rows, counting the rows SELECTs return,
pointing a subprocess at the test database, and the omnia fixture files."""

from __future__ import annotations

import os
import re
from collections import Counter
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from django.db import connection
from django.db.backends.utils import CursorWrapper

from memory.engine.write_door import remember
from memory.models import Episode, MemorySession

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).parent / "fixtures" / "omnia"

NOON = datetime(2026, 7, 6, 12, 0, tzinfo=UTC)


def at(minute: int, second: int = 0) -> str:
    moment = NOON + timedelta(minutes=minute, seconds=second)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.000Z")


def write(
    owner: str,
    minute: int,
    *,
    kind: str = "dialogue",
    conversation: str | None = None,
    location: str | None = "tavern-main",
    text: str = "hello",
    entry_id: str | None = None,
) -> str:
    intent = {
        "type": kind,
        "originalText": text,
        "description": text,
        "actorId": owner,
        "targetIds": [],
    }
    return remember(
        owner,
        intent,
        timestamp=at(minute),
        location_id=location,
        conversation_id=conversation,
        entry_id=entry_id,
    ).entry.id


def session_rows() -> list[tuple]:
    return sorted(
        MemorySession.objects.values_list(
            "owner_id",
            "session_key",
            "first_at",
            "last_at",
            "memory_count",
            "dialogue_count",
            "last_member_id",
            "content_hash",
        )
    )


def episode_rows() -> list[tuple]:
    return sorted(
        Episode.objects.values_list(
            "owner_id",
            "ordinal",
            "first_at",
            "last_at",
            "first_member_id",
            "last_member_id",
            "member_count",
            "is_open",
        )
    )


class RowCounter:
    """Counts the rows every SELECT on the named tables actually returned to Python."""

    def __init__(self) -> None:
        self.by_table: Counter[str] = Counter()

    def total(self, *tables: str) -> int:
        return sum(self.by_table[t] for t in tables) if tables else sum(self.by_table.values())


@contextmanager
def count_rows(monkeypatch: pytest.MonkeyPatch):
    counter = RowCounter()
    original_execute = CursorWrapper.execute

    def execute(self, sql, params=None):
        match = (
            re.search(r'\bFROM\s+"?(\w+)"?', sql)
            if sql.lstrip().upper().startswith("SELECT")
            else None
        )
        self._counted_table = match.group(1) if match else None
        return original_execute(self, sql, params)

    def tally(self, rows):
        table = getattr(self, "_counted_table", None)
        if table:
            counter.by_table[table] += len(rows)
        return rows

    monkeypatch.setattr(CursorWrapper, "execute", execute)
    monkeypatch.setattr(
        CursorWrapper, "fetchall", lambda self: tally(self, self.cursor.fetchall()), raising=False
    )
    monkeypatch.setattr(
        CursorWrapper,
        "fetchmany",
        lambda self, size=None: tally(
            self, self.cursor.fetchmany(size) if size is not None else self.cursor.fetchmany()
        ),
        raising=False,
    )

    def fetchone(self):
        row = self.cursor.fetchone()
        tally(self, [row] if row is not None else [])
        return row

    monkeypatch.setattr(CursorWrapper, "fetchone", fetchone, raising=False)
    yield counter
    monkeypatch.undo()


# --- subprocesses pointed at the test database -------------------------------------------------


def database_url() -> str:
    """The URL of the database this test runs against, for a subprocess to use."""
    settings = connection.settings_dict
    if connection.vendor == "sqlite":
        return f"sqlite:///{settings['NAME']}"
    host = settings.get("HOST") or "127.0.0.1"
    port = settings.get("PORT") or 5432
    user = settings.get("USER") or "postgres"
    return f"postgres://{user}@{host}:{port}/{settings['NAME']}"


def child_env() -> dict[str, str]:
    env = dict(os.environ)
    # The child is a plain manage.py process, not a test run: it must not re-derive a test name.
    env.update({"DATABASE_URL": database_url(), "OMNIA_DEBUG": "1", "PYTHONUNBUFFERED": "1"})
    env.pop("OMNIA_TESTING", None)
    return env


# --- whole-table snapshots -----------------------------------------------------------------------


def every_table() -> list[str]:
    """Every table of the inspector's app: omnia's mirrored ones, the saves, ours."""
    from django.apps import apps

    return sorted(
        {m._meta.db_table for m in apps.get_app_config("memory").get_models() if m._meta.managed}
    )


def table_rows() -> dict[str, list[tuple]]:
    """Every table's rows, for before/after comparisons (row for row)."""
    snapshot = {}
    with connection.cursor() as cursor:
        for table in every_table():
            cursor.execute(f"SELECT * FROM {table}")
            snapshot[table] = sorted(map(repr, cursor.fetchall()))
    return snapshot
