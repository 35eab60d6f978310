"""Faults, second round (issue 29), the follower: bound to its save's identity (a replace or
delete under it stops it, no row lost), alive through hostile writers (a schema change, a
dropped table, a truncated file, a row rewritten in place, the game switching its journal
mode and checkpointing, a lock held, a big field), and `follow_omnia --verify` comparing
content once the file is whole.

The follower runs as a person runs it: a manage.py child, its stderr in a file the test reads
while it runs. Every wait is a poll with a deadline (tests.helpers.wait_until).
"""

from __future__ import annotations

import json
import re
import signal
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from memory.worlds.standin import StandIn
from tests.cli import ROOT, isolated_env, manage
from tests.helpers import env_for_test_db, wait_until

pytestmark = pytest.mark.faults

MB = 1_000_000
FIXTURES = ROOT / "tests" / "fixtures" / "omnia"
OMNIA_FILE = FIXTURES / "omnia-head-tavern.sqlite"


def game_ids(path: Path, table: str = "buffer_entries") -> set[str]:
    with sqlite3.connect(path) as conn:
        found = {row[0] for row in conn.execute(f"SELECT id FROM {table}")}
    conn.close()
    return found


class Following:
    """`follow_omnia PATH` running, its stderr in a file."""

    def __init__(self, path: Path, env: dict[str, str], log: Path, *extra: str) -> None:
        self.log = log
        self.stderr = log.open("w")
        self.process = subprocess.Popen(
            [sys.executable, "manage.py", "follow_omnia", str(path), "--interval", "0.02", *extra],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=self.stderr,
            text=True,
        )

    def said(self) -> str:
        return self.log.read_text()

    def says(self, text: str, seconds: float = 60) -> bool:
        return wait_until(lambda: text in self.said(), seconds=seconds)

    def applied(self, table: str = "buffer_entries") -> int:
        """The rows it reported applied ("+N table" in its batch lines)."""
        return sum(int(n) for n in re.findall(rf"\+(\d+) {table}\b", self.said()))

    def alive(self) -> bool:
        return self.process.poll() is None

    def stop(self) -> tuple[int, str]:
        if self.alive():
            self.process.send_signal(signal.SIGTERM)
        stdout, _ = self.process.communicate(timeout=120)
        self.stderr.close()
        return self.process.returncode, stdout

    def kill(self) -> None:
        if self.alive():
            self.process.kill()
            self.process.wait(timeout=30)
        self.stderr.close()


# --- a replace or delete under a running follower ------------------------------------------------


def rows_of_save(save_id: int) -> int:
    from memory.models import BufferEntry

    return BufferEntry.every_save.filter(game_save_id=save_id).count()


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("how", ["replace", "delete"])
def test_a_save_replaced_or_deleted_under_a_running_follower_stops_it_and_loses_no_row(
    how, tmp_path
) -> None:
    # Issue 29: the follower went on writing into the retired save ("+10 buffer_entries"),
    # which the purge then deleted: 30 rows lost on SQLite, 40 on PostgreSQL.
    from django.core.management import call_command

    from memory.engine.saves import delete_save
    from memory.models import Save

    path = tmp_path / "game.sqlite"
    game = StandIn(path, seed=5, delete_every=0, alias_every=0)
    game.run(20, 0)
    following = Following(path, env_for_test_db(), tmp_path / "follower.log")
    try:
        assert wait_until(lambda: following.applied() == len(game_ids(path)), seconds=120)
        save_id = Save.objects.get(name="game").pk
        # The game writes on while the save is replaced or deleted under its follower.
        before = following.applied()
        writing = threading.Thread(target=game.run, args=(game.report.rows_written + 200, 100))
        writing.start()
        assert wait_until(lambda: following.applied() > before, seconds=60)
        if how == "replace":
            call_command("import_omnia", str(OMNIA_FILE), "--as", "game", "--replace")
        else:
            delete_save("game")
        writing.join(timeout=120)
        assert wait_until(lambda: not following.alive(), seconds=60)
        status, _ = following.stop()
    finally:
        following.kill()
    lines = following.said().splitlines()
    what = "was replaced by another import" if how == "replace" else "was deleted"
    assert status == 2
    assert lines[-1].startswith(f"CommandError: stopped: save 'game' {what} under the follower:")
    assert "Traceback" not in following.said()
    # Every row it reported is where it wrote it, and none went in after the replace.
    if how == "replace":
        retired = Save.objects.get(pk=save_id)
        assert retired.retired_at is not None
        assert rows_of_save(save_id) == following.applied()
        assert Save.objects.get(name="game").source_name == OMNIA_FILE.name
    else:
        assert not Save.objects.filter(pk=save_id).exists()
        assert rows_of_save(save_id) == 0
    # Following the game again into a save of its own holds every row the game wrote.
    again = manage("follow_omnia", str(path), "--once", "--as", "game-again", env=env_for_test_db())
    assert again.returncode == 0
    from memory.active_save import use
    from memory.models import BufferEntry

    with use(Save.objects.get(name="game-again")):
        held = set(BufferEntry.objects.values_list("id", flat=True))
    assert held == game_ids(path) and len(held) >= 220
    game.close()


# --- hostile writers with the follower alive ----------------------------------------------------


@pytest.fixture
def followed(fresh_sqlite, tmp_path):
    """A game (the stand-in, 20 turns) with a follower running, caught up."""
    database = fresh_sqlite("follow")
    env = isolated_env(database)
    path = tmp_path / "game.sqlite"
    game = StandIn(path, seed=7, delete_every=0, alias_every=0)
    game.conn.execute("PRAGMA busy_timeout = 5000")  # better-sqlite3's default, as omnia runs
    game.run(20, 0)
    following = Following(path, env, tmp_path / "follower.log")
    assert wait_until(lambda: following.applied() == len(game_ids(path)), seconds=120)
    yield game, following, path, env, database
    following.kill()
    game.close()


def held(database: Path, name: str = "game") -> dict[str, tuple]:
    with sqlite3.connect(database) as conn:
        rows = conn.execute(
            "SELECT b.id, b.intent_json FROM buffer_entries b JOIN memory_saves s "
            "ON s.id = b.game_save_id WHERE s.name = ? AND s.retired_at IS NULL",
            [name],
        ).fetchall()
    conn.close()
    return dict(rows)


def caught_up(path: Path, database: Path) -> bool:
    return set(held(database)) == game_ids(path)


def verified(path: Path, env: dict[str, str]) -> str:
    done = manage("follow_omnia", str(path), "--verify", env=env, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def stopped_cleanly(following: Following) -> None:
    status, stdout = following.stop()
    assert status == 0, following.said()[-2000:]
    assert "Traceback" not in following.said()
    assert "follow state kept" in stdout


def test_the_game_switches_journal_mode_and_checkpoints_while_followed(followed) -> None:
    # Issue 29: the follower held its read connection open between looks, so a game's
    # `PRAGMA journal_mode=DELETE` out of WAL failed "database is locked" 5 in 5.
    game, following, path, env, database = followed
    answers = []

    def pragma(sql: str) -> None:
        # As the stand-in takes every lock: asked again every millisecond while busy, for
        # up to its busy timeout (5 s, better-sqlite3's), then "database is locked".
        game._locked(lambda: answers.append(game.conn.execute(sql).fetchone()[0]))

    for _round in range(5):
        pragma("PRAGMA journal_mode=WAL")
        game.run(game.report.rows_written + 6, 0)
        assert wait_until(lambda: caught_up(path, database), seconds=60)
        pragma("PRAGMA wal_checkpoint(TRUNCATE)")
        pragma("PRAGMA journal_mode=DELETE")
        game.run(game.report.rows_written + 6, 0)
        assert wait_until(lambda: caught_up(path, database), seconds=60)
    assert answers == ["wal", 0, "delete"] * 5  # 0: the checkpoint was not blocked
    assert "locked" not in following.said()
    assert "holds the file, content for content" in verified(path, env)
    stopped_cleanly(following)


def test_a_lock_the_game_holds_is_said_in_one_line_and_waited_out(followed) -> None:
    # Issue 29: a game's exclusive lock was reported as "not an omnia SQLite world".
    game, following, path, env, database = followed
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    holder.execute("UPDATE objects SET clock_iso = clock_iso WHERE 0")
    game.conn.execute("PRAGMA busy_timeout = 0")
    assert following.says("the game holds a lock; waiting")
    holder.execute("COMMIT")
    holder.close()
    game.conn.execute("PRAGMA busy_timeout = 5000")
    game.run(game.report.rows_written + 5, 0)
    assert wait_until(lambda: caught_up(path, database), seconds=60)
    assert following.says("resumed: the file reads whole again")
    assert "not an omnia" not in following.said()
    assert following.said().count("the game holds a lock; waiting") == 1  # said once
    stopped_cleanly(following)


def _rename_column(conn: sqlite3.Connection) -> None:
    conn.execute("ALTER TABLE buffer_entries RENAME COLUMN intent_json TO intent")


def _drop_table(conn: sqlite3.Connection) -> None:
    conn.execute("DROP TABLE attribute_acl")


def _truncate(path: Path) -> None:
    with path.open("r+b") as file:
        file.truncate(path.stat().st_size // 2)


@pytest.mark.parametrize(
    ("damage", "said"),
    [
        (_rename_column, "column intent_json"),
        (_drop_table, "attribute_acl"),
        (_truncate, "database disk image is malformed"),
    ],
    ids=["renamed-column", "dropped-table", "truncated"],
)
def test_a_schema_change_or_damage_is_waited_out_and_the_follow_resumes(
    followed, damage, said
) -> None:
    # Issue 29: the follower died with a raw traceback on each of these.
    game, following, path, env, database = followed
    game.close()  # the game's connection would keep pages of the file we put back
    whole = path.read_bytes()
    if damage is _truncate:
        damage(path)
    else:
        with sqlite3.connect(path) as conn:
            damage(conn)
        conn.close()
    assert following.says("waiting for it to be whole again"), following.said()
    assert said in following.said().splitlines()[-1]
    assert following.alive()
    with path.open("r+b") as file:  # whole again, in place (the same inode: the same game)
        file.write(whole)
        file.truncate(len(whole))
    game = StandIn(path, seed=8, delete_every=0, alias_every=0)
    game.run(5, 0)
    assert wait_until(lambda: caught_up(path, database), seconds=60)
    assert following.says("resumed: the file reads whole again")
    assert "holds the file, content for content" in verified(path, env)
    game.close()
    stopped_cleanly(following)


def test_a_row_rewritten_in_place_is_applied_and_verify_compares_content(followed) -> None:
    # Issue 29: a row the game rewrote (same id, new intent) was never picked up, and
    # --verify could not see it (the counts match).
    game, following, path, env, database = followed
    stopped_cleanly(following)
    entry_id, intent = game.conn.execute(
        "SELECT id, intent_json FROM buffer_entries ORDER BY rowid LIMIT 1 OFFSET 3"
    ).fetchone()
    rewritten = json.dumps({**json.loads(intent), "content": "A line rewritten in place"})
    game.conn.execute(
        "UPDATE buffer_entries SET intent_json = ? WHERE id = ?", [rewritten, entry_id]
    )
    differs = manage("follow_omnia", str(path), "--verify", env=env, check=False)
    assert differs.returncode == 1
    assert differs.stdout.splitlines() == [f"buffer_entries: id={entry_id} differs in content"]
    assert "differs from the file: 1 buffer_entries (compared " in differs.stderr
    again = Following(path, env, path.with_name("again.log"))
    try:
        assert wait_until(lambda: held(database)[entry_id] == rewritten, seconds=60)
        assert again.says("1 buffer_entries rewritten in place")
        # And while it runs: the game rewrites another row.
        other = game.conn.execute(
            "SELECT id FROM buffer_entries ORDER BY rowid DESC LIMIT 1"
        ).fetchone()[0]
        game.conn.execute(
            "UPDATE buffer_entries SET intent_json = ? WHERE id = ?", [rewritten, other]
        )
        assert wait_until(lambda: held(database)[other] == rewritten, seconds=60)
        assert "holds the file, content for content" in verified(path, env)
        stopped_cleanly(again)
    finally:
        again.kill()


@pytest.mark.parametrize("size", [MB, 10 * MB], ids=["1MB", "10MB"])
def test_a_big_field_through_the_running_follower_is_refused_and_the_follow_goes_on(
    followed, size
) -> None:
    game, following, path, env, database = followed
    row = game.conn.execute(
        "SELECT owner_id, timestamp, location_id, intent_json FROM buffer_entries LIMIT 1"
    ).fetchone()
    intent = json.dumps({**json.loads(row[3]), "content": "z" * size})
    game.conn.execute(
        "INSERT INTO buffer_entries (id, owner_id, timestamp, location_id, intent_json) "
        "VALUES ('big-row', ?, ?, ?, ?)",
        [row[0], row[1], row[2], intent],
    )
    assert following.says("row id=big-row")
    line = following.said().splitlines()[-1]
    assert "the limit is 65,536" in line and line.endswith("; waiting for the file to change")
    assert following.alive()
    assert "big-row" not in held(database)
    game.conn.execute("DELETE FROM buffer_entries WHERE id = 'big-row'")
    game.run(game.report.rows_written + 5, 0)
    assert wait_until(lambda: caught_up(path, database), seconds=60)
    assert "holds the file, content for content" in verified(path, env)
    stopped_cleanly(following)


@pytest.mark.django_db
def test_the_sweep_applies_rewrites_of_buffer_and_ledger_rows_on_this_backend(tmp_path) -> None:
    # In-process, on the test run's backend (PostgreSQL hands BLOBs back as memoryview: a
    # ledger embedding must compare equal to the file's bytes, never as a rewrite).
    from memory.active_save import use
    from memory.models import BufferEntry, LedgerEntry
    from memory.worlds.live import Follower, verify

    path = tmp_path / "game.sqlite"
    game = StandIn(path, seed=11, delete_every=0, alias_every=0, ledger_every=2)
    game.run(60, 0)
    follower = Follower(path)
    results = [follower.tick()]
    while (result := follower.tick()) is not None:  # the racily-clean looks, the sweep
        results.append(result)
    assert all(not r.rewritten for r in results)
    buffer_id = game.conn.execute("SELECT id FROM buffer_entries LIMIT 1 OFFSET 5").fetchone()[0]
    ledger_id, embedding = game.conn.execute(
        "SELECT id, embedding FROM ledger_entries LIMIT 1"
    ).fetchone()
    if embedding is None:  # the stand-in writes none: give this row one, then follow it
        embedding = bytes(range(16))
        game.conn.execute(
            "UPDATE ledger_entries SET embedding = ? WHERE id = ?", [embedding, ledger_id]
        )
        assert follower.tick().rewritten == {"ledger_entries": 1}
        assert follower.tick() is None  # the same bytes again: no rewrite
    intent = json.dumps({"type": "thought", "content": "Rewritten.", "actorId": "x"})
    game.conn.execute("UPDATE buffer_entries SET intent_json = ? WHERE id = ?", [intent, buffer_id])
    game.conn.execute(
        "UPDATE ledger_entries SET content = 'Rewritten too.', importance = 9 WHERE id = ?",
        [ledger_id],
    )
    result = follower.tick()
    assert result.rewritten == {"buffer_entries": 1, "ledger_entries": 1}
    assert result.added == {"buffer_entries": 0, "ledger_entries": 0, "ledger_involved_entities": 0}
    assert result.summary() == (
        "1 buffer_entries rewritten in place, 1 ledger_entries rewritten in place"
    )
    with use(follower.save):
        assert BufferEntry.objects.get(id=buffer_id).intent_json == intent
        entry = LedgerEntry.objects.get(id=ledger_id)
        assert (entry.content, entry.importance, bytes(entry.embedding)) == (
            "Rewritten too.",
            9,
            embedding,
        )
    found = verify(path, follower.save)
    assert found.clean and found.examples == []
    assert found.compared["buffer_entries"] == len(game_ids(path))
    game.close()


@pytest.mark.django_db
def test_a_follow_up_whose_cycle_fails_is_the_saves_problem_and_the_follow_goes_on(
    tmp_path, monkeypatch
) -> None:
    # Issue 29: a helper of the projection cycle raising on a save's data took the process
    # down; the follower's follow-up runs that cycle after every batch.
    from memory.active_save import use
    from memory.models import BufferEntry, ProjectionProblem
    from memory.worlds.live import Follower
    from memory.worlds.live import apply as live_apply

    path = tmp_path / "game.sqlite"
    game = StandIn(path, seed=12, delete_every=0, alias_every=0)
    game.run(20, 0)
    real = live_apply.run_upkeep

    def dies(*args, **kwargs):
        raise MemoryError("the scanner died on <script>x</script>")

    monkeypatch.setattr(live_apply, "run_upkeep", dies)
    follower = Follower(path)
    result = follower.tick()
    reason = "the projection cycle failed: MemoryError: the scanner died on <script>x</script>"
    assert result.cycle_failed == reason and result.summary().endswith(f"objects synced, {reason}")
    with use(follower.save):
        assert set(BufferEntry.objects.values_list("id", flat=True)) == game_ids(path)
        assert list(ProjectionProblem.objects.values_list("table_name", "reason")) == [
            ("upkeep", reason)
        ]
    game.run(game.report.rows_written + 5, 0)
    monkeypatch.setattr(live_apply, "run_upkeep", real)
    assert follower.tick().cycle_failed == ""
    assert follower.follow_up_due is False
    with use(follower.save):
        assert set(BufferEntry.objects.values_list("id", flat=True)) == game_ids(path)
        assert not ProjectionProblem.objects.exists()
    game.close()


# --- one follower a save ---------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_a_second_follower_of_a_save_is_refused_and_a_killed_one_leaves_no_lock(tmp_path) -> None:
    # Issue 29, finding 9: a second follow_omnia of the same file ran beside the first, both
    # applying the game's changes each from its own marks.
    from memory.models import BufferEntry, LiveFollow

    path = tmp_path / "game.sqlite"
    game = StandIn(path, seed=3, delete_every=0, alias_every=0)
    game.run(20, 0)
    env = env_for_test_db()
    first = Following(path, env, tmp_path / "first.log")
    try:
        assert wait_until(lambda: first.applied() == len(game_ids(path)), seconds=120)
        version = LiveFollow.every_save.get().version
        for name in ("game", "GAME"):  # one save whatever the case of its name
            second = manage("follow_omnia", str(path), "--as", name, "--once", env=env, check=False)
            assert second.returncode == 2
            assert second.stderr.startswith(
                f"CommandError: refused: save {name!r} is already followed by another "
                "follow_omnia ("
            ), second.stderr
            assert second.stderr.endswith(
                "); stop that one first, or follow into another save with --as NAME\n"
            )
            assert "Traceback" not in second.stderr
        assert LiveFollow.every_save.get().version == version  # the second wrote nothing
        # --verify only reads: it runs beside the follower.
        assert manage("follow_omnia", str(path), "--verify", env=env, check=False).returncode == 0
        first.kill()  # -9: no chance to let anything go
        game.run(game.report.rows_written + 10, 0)
        # The lock went with the process: the next follower starts at once and goes on from
        # the first one's marks.
        again = manage("follow_omnia", str(path), "--once", env=env)
        assert again.returncode == 0 and "+10 buffer_entries" in again.stderr
        assert BufferEntry.every_save.count() == len(game_ids(path))
    finally:
        first.kill()
