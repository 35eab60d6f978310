"""A game stand-in: writes an omnia SQLite save the way a running omnia game does, for the live
follower's tests, its benchmark and a two-terminal demo (`manage.py omnia_standin`).

Like omnia (better-sqlite3, default settings): omnia's own DDL (memory.worlds.ddl, the later
era), the default rollback journal, one short write transaction per turn. A turn is one intent:
one buffer row per witness (every entity in the actor's location, each with its own id, as
omnia's buffer writes a copy per witness); now and then a witness learns a name (its
aliases_json rewritten, as omnia's `JSON.stringify(Array.from(map.entries()))`), the world
clock moves, a ledger entry lands, and a buffer row is deleted (omnia's handoff deletes rows).

It measures what the follower must never cause: how long each write waited for a lock. A
reader holding the file's SHARED lock keeps a rollback-journal writer out of its COMMIT; the
time spent in BEGIN IMMEDIATE and COMMIT (the commit's own fsync included, so it is an upper
bound) is reported per transaction, the largest as `max_lock_wait_ms`.
"""

from __future__ import annotations

import json
import random
import sqlite3
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

from memory.worlds.ddl import OMNIA_V2_DDL, statements

WORLD = "harbor-live"
BUSY_TIMEOUT_S = 5.0  # better-sqlite3's default
START = datetime(2026, 7, 6, 9, 0, tzinfo=UTC)

# (id, location, true name, appearance): the true name is PRIVATE, as in omnia's fixtures.
CAST = (
    ("mara", "quay", "Mara Voss", "a woman in a brass-buttoned coat"),
    ("tobin", "quay", "Tobin Reed", "a wiry dockhand with tarred hands"),
    ("ilse", "quay", "Ilse Brandt", "a grey-haired net mender"),
    ("kasimir", "tavern", "Kasimir Holt", "a bearded man with a sea chest"),
    ("wren", "tavern", "Wren Talley", "a girl carrying a lantern"),
    ("odo", "tavern", "Odo Pike", "a stout innkeeper in an apron"),
)
LOCATIONS = (("quay", "the fog-bound quay"), ("tavern", "the Anchor tavern"))
ACTIONS = (
    "coils a rope by the bollard",
    "glances at the harbor lights",
    "counts coins under the table",
    "wipes the salt off a window",
    "lights a pipe",
)
LINES = ("Fog is thick tonight", "Any ships due?", "Keep your voice down", "I heard the bell")


def iso(moment: datetime) -> str:
    """omnia's clock format: Date.toISOString(), milliseconds and a Z."""
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


@dataclass
class StandInReport:
    rows_written: int = 0  # buffer rows inserted (one per witness)
    turns: int = 0
    deletes: int = 0
    alias_changes: int = 0
    ledger_written: int = 0
    leaks_planted: int = 0
    transactions: int = 0
    max_lock_wait_ms: float = 0.0
    busy_retries: int = 0
    # (entry id, wall time of its commit): the benchmark's start of "game commit -> visible".
    commits: list[tuple[str, float]] = field(default_factory=list)

    def as_dict(self) -> dict[str, object]:
        return {k: v for k, v in self.__dict__.items() if k != "commits"}


class StandIn:
    """One game writing one save file. `turn()` is one intent; `run()` paces turns to a rate."""

    def __init__(
        self,
        path: str | Path,
        *,
        seed: int = 0,
        delete_every: int = 25,
        alias_every: int = 10,
        ledger_every: int = 40,
        keep_commits: bool = False,
    ) -> None:
        self.path = Path(path)
        self.rng = random.Random(seed)
        self.delete_every, self.alias_every, self.ledger_every = (
            delete_every,
            alias_every,
            ledger_every,
        )
        self.keep_commits = keep_commits
        self.report = StandInReport()
        # No busy timeout in the driver: _locked() waits (up to better-sqlite3's default 5 s)
        # and measures the wait.
        self.conn = sqlite3.connect(
            self.path, timeout=0, isolation_level=None, check_same_thread=False
        )
        self.conn.execute("PRAGMA foreign_keys = ON")
        if not self._has_world():
            self._create()
        else:  # a game resumed: new ids must not repeat the ones the first run drew
            written = self.conn.execute("SELECT max(rowid) FROM buffer_entries").fetchone()[0]
            self.rng = random.Random(f"{seed}/{written}/{self._clock().isoformat()}")
        self.clock = self._clock()

    # --- setup --------------------------------------------------------------------------

    def _has_world(self) -> bool:
        found = self.conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type='table' AND name='objects'"
        ).fetchone()
        return bool(found) and bool(
            self.conn.execute("SELECT 1 FROM objects WHERE id = ?", [WORLD]).fetchone()
        )

    def _create(self) -> None:
        def build(cur: sqlite3.Connection) -> None:
            for statement in statements(OMNIA_V2_DDL):
                cur.execute(statement)
            cur.execute(
                "INSERT INTO objects (id, type, world_id, clock_iso, location_id, aliases_json, "
                "connections_json, is_agent) VALUES (?, 'world', NULL, ?, NULL, NULL, NULL, NULL)",
                [WORLD, iso(START)],
            )
            cur.execute(
                "INSERT INTO attributes VALUES (?, 'name', 'Greyhaven harbor', 'PUBLIC')", [WORLD]
            )
            for loc_id, description in LOCATIONS:
                cur.execute(
                    "INSERT INTO objects VALUES (?, 'location', ?, NULL, NULL, NULL, '[]', NULL)",
                    [loc_id, WORLD],
                )
                cur.execute(
                    "INSERT INTO attributes VALUES (?, 'description', ?, 'PUBLIC')",
                    [loc_id, description],
                )
            for entity_id, location, true_name, appearance in CAST:
                cur.execute(
                    "INSERT INTO objects VALUES (?, 'entity', ?, NULL, ?, '[]', NULL, 1)",
                    [entity_id, WORLD, location],
                )
                cur.execute(
                    "INSERT INTO attributes VALUES (?, 'true_name', ?, 'PRIVATE')",
                    [entity_id, true_name],
                )
                cur.execute(
                    "INSERT INTO attributes VALUES (?, 'appearance', ?, 'PUBLIC')",
                    [entity_id, appearance],
                )

        self._write(build)

    def _clock(self) -> datetime:
        row = self.conn.execute("SELECT clock_iso FROM objects WHERE id = ?", [WORLD]).fetchone()
        return datetime.fromisoformat(row[0].replace("Z", "+00:00"))

    # --- writing ------------------------------------------------------------------------

    def _write(self, work: Callable[[sqlite3.Connection], object]) -> object:
        """One write transaction. Where it can wait on a reader (BEGIN IMMEDIATE takes the
        RESERVED lock; COMMIT the EXCLUSIVE one, which waits for every SHARED holder), it asks
        with no busy timeout and retries every millisecond, as SQLite's busy handler would:
        the time from the first refusal to the attempt that got the lock is the wait. The
        commit's own fsync is not a wait and is not counted."""
        waited = self._locked(lambda: self.conn.execute("BEGIN IMMEDIATE"))
        try:
            result = work(self.conn)
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        waited += self._locked(lambda: self.conn.execute("COMMIT"))
        self.report.transactions += 1
        self.report.max_lock_wait_ms = max(self.report.max_lock_wait_ms, waited * 1000)
        return result

    def _locked(self, step: Callable[[], object]) -> float:
        """Run `step` until SQLite stops answering busy; return the seconds spent waiting."""
        first_refusal = None
        while True:
            attempt = time.perf_counter()
            try:
                step()
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) and "busy" not in str(exc):
                    raise
                self.report.busy_retries += 1
                first_refusal = first_refusal if first_refusal is not None else attempt
                if time.perf_counter() - first_refusal > BUSY_TIMEOUT_S:
                    raise
                time.sleep(0.001)
                continue
            return attempt - first_refusal if first_refusal is not None else 0.0

    def _entities_at(self, cur: sqlite3.Connection, location: str) -> list[str]:
        return [
            r[0]
            for r in cur.execute(
                "SELECT id FROM objects WHERE type = 'entity' AND location_id = ? ORDER BY rowid",
                [location],
            )
        ]

    def turn(self, *, content: str | None = None, actor: str | None = None) -> list[str]:
        """One intent, seen by every entity in the actor's location; returns the new row ids."""
        rng = self.rng
        self.report.turns += 1
        n = self.report.turns
        self.clock += timedelta(seconds=rng.randint(5, 90))
        now = iso(self.clock)
        actor = actor or rng.choice(CAST)[0]

        def work(cur: sqlite3.Connection) -> list[str]:
            location = cur.execute(
                "SELECT location_id FROM objects WHERE id = ?", [actor]
            ).fetchone()[0]
            witnesses = self._entities_at(cur, location)
            others = [w for w in witnesses if w != actor]
            target = rng.choice(others) if others else None
            if content is not None:
                kind, text = "dialogue", content
            elif target and rng.random() < 0.5:
                kind = "dialogue"
                line = rng.choice(LINES)
                text = f'entity@{actor}[I] say "{line}" to entity@{target}[{target}]'
            else:
                kind, text = "action", f"entity@{actor}[I] {rng.choice(ACTIONS)}"
            intent = json.dumps(
                {
                    "type": kind,
                    "content": text,
                    "targetIds": [target] if target else [],
                    "modifiers": [],
                    "actorId": actor,
                },
                separators=(",", ":"),
            )
            outcome = (
                None
                if kind == "dialogue"
                else json.dumps({"isValid": True, "reason": "It works."}, separators=(",", ":"))
            )
            ids = []
            for witness in witnesses:
                entry_id = str(uuid.UUID(int=rng.getrandbits(128), version=4))
                cur.execute(
                    "INSERT INTO buffer_entries (id, owner_id, timestamp, location_id, "
                    "intent_json, outcome_json, pinned) VALUES (?, ?, ?, ?, ?, ?, 0)",
                    [entry_id, witness, now, location, intent, outcome],
                )
                ids.append(entry_id)
            cur.execute("UPDATE objects SET clock_iso = ? WHERE id = ?", [now, WORLD])
            if self.alias_every and n % self.alias_every == 0 and target:
                self._learn(cur, target, actor)
            if self.delete_every and n % self.delete_every == 0:
                self._handoff(cur)
            if self.ledger_every and n % self.ledger_every == 0:
                self._ledger(cur, actor, location, now, others)
            if n % 7 == 0:  # someone walks to the other place now and then
                mover = rng.choice(CAST)[0]
                there = rng.choice(LOCATIONS)[0]
                cur.execute("UPDATE objects SET location_id = ? WHERE id = ?", [there, mover])
            return ids

        ids = self._write(work)
        committed = time.time()
        self.report.rows_written += len(ids)
        if self.keep_commits:
            self.report.commits.extend((entry_id, committed) for entry_id in ids)
        return ids

    def _learn(self, cur: sqlite3.Connection, viewer: str, target: str) -> None:
        """The viewer learns what to call the target: a descriptor, later the true name."""
        row = cur.execute("SELECT aliases_json FROM objects WHERE id = ?", [viewer]).fetchone()
        aliases = dict(json.loads(row[0] or "[]"))
        names = {c[0]: (c[2], c[3]) for c in CAST}
        true_name, appearance = names[target]
        aliases[target] = true_name if target in aliases else appearance
        cur.execute(
            "UPDATE objects SET aliases_json = ? WHERE id = ?",
            [json.dumps(list(aliases.items()), separators=(",", ":")), viewer],
        )
        self.report.alias_changes += 1

    def _handoff(self, cur: sqlite3.Connection) -> None:
        """Delete one older buffer row, as omnia's handoff does."""
        row = cur.execute(
            "SELECT id FROM buffer_entries ORDER BY rowid LIMIT 1 OFFSET ?",
            [self.rng.randint(0, 40)],
        ).fetchone()
        if row:
            cur.execute("DELETE FROM buffer_entries WHERE id = ?", [row[0]])
            self.report.deletes += 1

    def _ledger(self, cur, owner: str, location: str, now: str, involved: list[str]) -> None:
        entry_id = f"ledger-{self.report.turns}-{self.rng.getrandbits(32):08x}"
        cur.execute(
            "INSERT INTO ledger_entries (id, owner_id, timestamp, location_id, content, "
            "quotes_json, importance, embedding) VALUES (?, ?, ?, ?, ?, '[]', ?, NULL)",
            [entry_id, owner, now, location, f"entity@{owner}[I] noted the hour.", 5],
        )
        for entity_id in involved[:2]:
            cur.execute("INSERT INTO ledger_involved_entities VALUES (?, ?)", [entry_id, entity_id])
        self.report.ledger_written += 1

    def plant_leak(self, viewer: str = "mara", named: str = "tobin") -> list[str]:
        """A row whose words carry a true name the viewer was never told: a leak to find."""
        true_name = {c[0]: c[2] for c in CAST}[named]
        self.report.leaks_planted += 1
        return self.turn(
            actor=viewer, content=f'entity@{viewer}[I] say "They call him {true_name}"'
        )

    def run(
        self,
        rows: int,
        rate: float,
        *,
        should_stop: Callable[[], bool] = lambda: False,
        on_turn: Callable[[StandInReport], None] | None = None,
    ) -> StandInReport:
        """Write turns until `rows` buffer rows are written, at about `rate` rows a second
        (0: as fast as it can)."""
        started = time.perf_counter()
        while self.report.rows_written < rows and not should_stop():
            self.turn()
            if on_turn is not None:
                on_turn(self.report)
            if rate > 0:
                due = started + self.report.rows_written / rate
                pause = due - time.perf_counter()
                if pause > 0:
                    time.sleep(pause)
        return self.report

    def close(self) -> None:
        self.conn.close()
