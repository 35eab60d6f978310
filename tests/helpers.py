"""Plain helpers shared by several test modules (test modules never import each other).

Writing through the real door, snapshotting projection rows, counting the rows SELECTs return,
pointing a subprocess at the test database, waiting on what a test can observe, and the worlds
the shared fixtures in conftest.py build (the omnia fixture files, millbrook)."""

from __future__ import annotations

import os
import re
import sqlite3
import subprocess
import time
from collections import Counter
from collections.abc import Callable
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
# The tavern's omnia file at two commits; an import names its save after the file.
TAVERN_V1, TAVERN_V2 = "omnia-74ffb45-tavern", "omnia-head-tavern"
# The password `make run` gives the designer login (the `designer` fixture).
DESIGNER_PASSWORD = "omnia-demo"

# bob, to alice "the hooded figure", opens the wooden chest (the `chest` fixture).
CHEST = {
    "type": "action",
    "originalText": "opened the wooden chest",
    "description": "opened the wooden chest",
    "actorId": "bob",
    "targetIds": [],
}
CHEST_LINE = "[12:03:00 PM] the hooded figure opened the wooden chest (Outcome: Succeeded)"

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
            # (the first table read: not a function such as unnest of PostgreSQL's batch reads)
            re.search(r'\bFROM\s+"?(\w+)\b"?(?!\()', sql)
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


def env_for_test_db() -> dict[str, str]:
    """The environment of a manage.py child that reads and writes this test's own database."""
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


# --- waiting on what can be observed -------------------------------------------------------------


def wait_until(check: Callable[[], bool], seconds: float = 30.0, every: float = 0.05) -> bool:
    """Poll `check` until it holds or the deadline passes; its last answer. A test proves an
    order this way, never by sleeping a fixed time."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(every)
    return check()


# --- a child process's own children, through /proc (Linux) -----------------------------------


def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        tree.setdefault(ppid, []).append(int(entry))
    return tree


def descendants(pid: int) -> set[int]:
    tree, found, todo = _children(), set(), [pid]
    while todo:
        for child in tree.get(todo.pop(), []):
            found.add(child)
            todo.append(child)
    return found


def cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def validator_up(importer: subprocess.Popen, timeout: float = 60) -> set[int]:
    """Wait until the import's validator helper is up (it starts with the first batch of rows
    going in) and return its pids; empty if the import ended or the time ran out first."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and importer.poll() is None:
        helpers = {pid for pid in descendants(importer.pid) if b"multiprocessing" in cmdline(pid)}
        if helpers:
            return helpers
        time.sleep(0.02)
    return set()


# --- worlds --------------------------------------------------------------------------------------


def big_world(path: Path, rows: int) -> Path:
    """An omnia v1 file with one NPC, ann, who remembers `rows` actions."""
    from memory.worlds.ddl import OMNIA_V1_DDL

    conn = sqlite3.connect(path)
    conn.executescript(OMNIA_V1_DDL)
    conn.execute(
        "INSERT INTO objects VALUES ('big-world', 'world', NULL, '2026-07-06T12:00:00.000Z', "
        "NULL, NULL)"
    )
    conn.execute("INSERT INTO objects VALUES ('ann', 'entity', 'big-world', NULL, 'hall', NULL)")
    intent = (
        '{"type":"action","originalText":"x","description":"waits","actorId":"ann","targetIds":[]}'
    )
    conn.executemany(
        "INSERT INTO buffer_entries VALUES (?, 'ann', ?, 'hall', ?, NULL)",
        (
            (f"row-{i:06d}", f"2026-07-06T12:{i // 1000 % 60:02d}:{i % 60:02d}.000Z", intent)
            for i in range(rows)
        ),
    )
    conn.commit()
    conn.close()
    return path


def _millbrook_memory(n: int, owner_note: str, description: str) -> dict:
    return {
        "id": f"{owner_note}-{n}",
        "timestamp": f"2026-07-06T12:0{n}:00.000Z",
        "locationId": "the-tannery",
        "intent": {
            "type": "action",
            "actorId": "hale",
            "targetIds": [],
            "originalText": description,
            "description": description,
        },
    }


def _private_name(value: str) -> list[dict]:
    return [{"name": "name", "value": value, "visibility": "PRIVATE", "allowedEntities": []}]


# A river town with readable ids (an NPC `hale` named "Hale Morrow", a place `the-tannery`),
# whose people say hale's private name: the `millbrook` fixture loads it.
MILLBROOK = {
    "id": "millbrook",
    "name": "Millbrook",
    "description": "A river town.",
    "startTime": "2026-07-06T12:30:00.000Z",
    "locations": [
        {
            "id": "the-tannery",
            "attributes": [
                {"name": "description", "value": "a reeking tannery", "visibility": "PUBLIC"}
            ],
        }
    ],
    "entities": [
        {
            "id": "hale",
            "locationId": "the-tannery",
            "attributes": _private_name("Hale Morrow"),
            "aliases": {"ned": "the carter", "ida": "the girl with the basket"},
            "initialMemories": [
                _millbrook_memory(1, "hale", "scrapes hides and says 'Hale works alone'"),
                _millbrook_memory(2, "hale", "counts coins; Hale sighs at the-tannery door"),
            ],
        },
        {
            "id": "ned",
            "locationId": "the-tannery",
            "attributes": _private_name("Ned Farrow"),
            "aliases": {"hale": "Hale Morrow"},
            "initialMemories": [_millbrook_memory(1, "ned", "waves; Hale is busy")],
        },
        {
            "id": "ida",
            "locationId": "the-tannery",
            "attributes": _private_name("Ida"),
            "aliases": {"hale": "the tanner's widow"},
            "initialMemories": [
                _millbrook_memory(1, "ida", "waves; Hale is busy"),
                _millbrook_memory(2, "ida", "sighs; Hale walks to the-tannery"),
                _millbrook_memory(3, "ida", "Hale is at the-tannery again"),
            ],
        },
    ],
}


def _lighthouse_memory(owner: str, n: int, description: str) -> dict:
    return {
        "id": f"{owner}-{n}",
        "timestamp": f"2026-07-06T21:0{n}:00.000Z",
        "locationId": "gallery",
        "intent": {
            "type": "action",
            "actorId": owner,
            "targetIds": [],
            "originalText": description,
            "description": description,
        },
    }


# The lighthouse (issue 28): readable ids that are ordinary words — `keeper` ("Ewan Mor"),
# `castaway` ("Tam Reid"), `miller` ("Jon Bell") — each name PRIVATE. Ada writes them as
# descriptions ("the keeper", "an old castaway"); Bo writes them as names ("Keeper",
# "ask keeper"). LIGHTHOUSE_LABELLED says, per line, which id each one leaks and whether it
# reads as a description: the labelled leak set the scanner is held against.
LIGHTHOUSE_LINES = {
    "ada": [
        "waves to the keeper on the gallery",
        "hands an old castaway a blanket",
        "buys flour from the miller at dawn",
        "thinks the keeper is kind",
    ],
    "bo": [
        "says Keeper will light the lamp",
        "asks keeper about the storm",
        "nods; castaway sleeps by the stove",
        "pays miller in coin",
    ],
}
# (viewer, line number, id written, reads as a description)
LIGHTHOUSE_LABELLED = [
    ("ada", 1, "keeper", True),
    ("ada", 2, "castaway", True),
    ("ada", 3, "miller", True),
    ("ada", 4, "keeper", True),
    ("bo", 1, "keeper", False),
    ("bo", 2, "keeper", False),
    ("bo", 3, "castaway", False),
    ("bo", 4, "miller", False),
]
LIGHTHOUSE = {
    "id": "lighthouse",
    "name": "The Lighthouse",
    "description": "A rock and a lamp.",
    "startTime": "2026-07-06T21:30:00.000Z",
    "locations": [
        {
            "id": "gallery",
            "attributes": [
                {"name": "description", "value": "the lamp gallery", "visibility": "PUBLIC"}
            ],
        }
    ],
    "entities": [
        *(
            {
                "id": entity_id,
                "locationId": "gallery",
                "attributes": _private_name(name),
                "aliases": {},
                "initialMemories": [],
            }
            for entity_id, name in (
                ("keeper", "Ewan Mor"),
                ("castaway", "Tam Reid"),
                ("miller", "Jon Bell"),
            )
        ),
        *(
            {
                "id": viewer,
                "locationId": "gallery",
                "attributes": _private_name(name),
                "aliases": {},
                "initialMemories": [
                    _lighthouse_memory(viewer, n, line)
                    for n, line in enumerate(LIGHTHOUSE_LINES[viewer], 1)
                ],
            }
            for viewer, name in (("ada", "Ada Quill"), ("bo", "Bo Finch"))
        ),
    ],
}
