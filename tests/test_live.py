"""follow_omnia against the game stand-in, as a person runs them: two processes and a file.

Each test gets its own inspector database (a file, migrated once per run and copied:
`fresh_sqlite`), so the follower can be killed with SIGKILL and started again exactly as in
production."""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli import ROOT, isolated_env, manage
from tests.helpers import wait_until

# The same on every backend: CI runs it on SQLite only (see the markers in pyproject.toml).
pytestmark = pytest.mark.terminal

# The mirrored tables, omnia's columns (plus ours that an import fixes: file_order where the
# import numbers rows by their place in the file, the shard, the untimed mark, the ledger's
# scope and slug). created_at is the write time of the import and is compared as an order.
MIRRORED = {
    "objects": "id, type, world_id, clock_iso, location_id, aliases_json, connections_json, "
    "is_agent, file_order",
    "attributes": "object_id, name, value, visibility, file_order",
    "attribute_acl": "object_id, attribute_name, entity_id, file_order",
    "buffer_entries": "id, owner_id, timestamp, location_id, intent_json, outcome_json, pinned, "
    "shard, untimed",
    "ledger_entries": "id, owner_id, timestamp, location_id, content, quotes_json, importance, "
    "embedding, scope_id, slug",
    "ledger_involved_entities": "entry_id, entity_id",
}
# Rows in write order (the order an export writes them back).
ORDERS = {
    "buffer_entries": "SELECT id FROM buffer_entries ORDER BY created_at, id",
    "ledger_entries": "SELECT id FROM ledger_entries ORDER BY created_at, id",
    "ledger_involved_entities": "SELECT entry_id, entity_id FROM ledger_involved_entities "
    "ORDER BY file_order",
}


def snapshot(db: Path, name: str = "game") -> dict[str, list]:
    """The save's rows (a save --replace retired stays readable for a grace period)."""
    with sqlite3.connect(db) as conn:
        (save_id,) = conn.execute(
            "SELECT id FROM memory_saves WHERE name = ? AND retired_at IS NULL", [name]
        ).fetchone()
        out = {}
        for table, cols in MIRRORED.items():
            rows = conn.execute(f"SELECT {cols} FROM {table} WHERE game_save_id = ?", [save_id])
            out[table] = sorted(rows.fetchall(), key=repr)
        for table, sql in ORDERS.items():
            where = f"WHERE game_save_id = {int(save_id)} ORDER BY"
            out[f"{table} (order)"] = conn.execute(sql.replace("ORDER BY", where)).fetchall()
    return out


def assert_same_as_fresh_import(followed: Path, save: Path, fresh: Path) -> None:
    manage("import_omnia", str(save), env=isolated_env(fresh))
    assert_same_as_imported(followed, save, fresh)


def assert_same_as_imported(followed: Path, save: Path, fresh: Path) -> None:
    """The followed save, row for row, is `fresh` (an import of `save`), and its projections
    verify."""
    ours, theirs = snapshot(followed), snapshot(fresh)
    for table in theirs:
        assert ours[table] == theirs[table], table
    with sqlite3.connect(save) as game:
        assert len(ours["buffer_entries"]) == game.execute(
            "SELECT COUNT(*) FROM buffer_entries").fetchone()[0]  # fmt: skip
    verify = manage("rebuild_projections", "--verify", env=isolated_env(followed), check=False)
    assert verify.returncode == 0, verify.stdout + verify.stderr
    assert " 0 drifted fields" in verify.stdout and "0 differing" in verify.stdout


def follower(db: Path, save: Path, *extra: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "manage.py", "follow_omnia", str(save), "--interval", "0.05", *extra],
        cwd=ROOT,
        env=isolated_env(db),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def wait_caught_up(followed: Path, fresh: Path, timeout: float = 180) -> None:
    """Until the followed save holds what a fresh import of the file holds (the file's last
    rows, its deletes and its alias changes all applied). The follower's follow-up for that
    batch (fold, leak findings) runs in the same tick, which a SIGTERM lets finish."""
    theirs = snapshot(fresh)
    assert wait_until(lambda: snapshot(followed) == theirs, seconds=timeout, every=0.1), (
        "the follower did not catch up"
    )


def test_follow_while_the_game_writes_2000_rows(fresh_sqlite, tmp_path):
    db, save = fresh_sqlite("followed"), tmp_path / "game.sqlite"
    manage("omnia_standin", str(save), "--rows", "0", env=isolated_env(db))  # the world exists
    follow = follower(db, save)
    try:
        game = manage(
            "omnia_standin", str(save), "--rows", "2000", "--rate", "300", "--seed", "3",
            "--delete-every", "7", "--alias-every", "4", "--json",
            env=isolated_env(db),
        )  # fmt: skip
        report = json.loads(game.stdout)
        fresh = fresh_sqlite("fresh")
        manage("import_omnia", str(save), env=isolated_env(fresh))
        wait_caught_up(db, fresh)
    finally:
        follow.send_signal(signal.SIGTERM)
        out, err = follow.communicate(timeout=30)
    assert follow.returncode == 0, err
    assert report["rows_written"] >= 2000 and report["deletes"] > 40
    assert report["alias_changes"] > 100
    # The follower never held the writer up: its longest wait for a lock, measured in the game.
    assert report["max_lock_wait_ms"] <= 50, report
    assert "batch " in err and "lag " in err  # progress and lag on stderr
    with sqlite3.connect(db) as conn:
        batches = conn.execute("SELECT batches FROM memory_live_follows").fetchone()[0]
    assert batches >= 4, err  # followed as it went, not read once at the end
    assert_same_as_imported(db, save, fresh)


def test_kill_9_mid_batch_then_resume(fresh_sqlite, tmp_path):
    db, save = fresh_sqlite("followed"), tmp_path / "game.sqlite"
    manage(
        "omnia_standin", str(save), "--rows", "3000", "--rate", "0", "--seed", "5",
        "--delete-every", "5", env=isolated_env(db),
    )  # fmt: skip
    for kill_after in ("batch 2:", "batch 5:", "batch 9:"):
        follow = follower(db, save, "--batch-rows", "97")
        seen = ""
        while kill_after not in seen:
            line = follow.stderr.readline()
            assert line, f"the follower ended early: {seen}"
            seen += line
        follow.send_signal(signal.SIGKILL)  # in the middle of the next batch
        follow.wait(timeout=10)
        # The game goes on meanwhile: deletes and new rows the restart must pick up.
        manage(
            "omnia_standin", str(save), "--rows", "150", "--rate", "0", "--seed", "6",
            "--delete-every", "3", env=isolated_env(db),
        )  # fmt: skip
    done = manage("follow_omnia", str(save), "--once", env=isolated_env(db))
    assert "batches" in done.stdout
    with sqlite3.connect(db) as conn, sqlite3.connect(save) as game:
        held = conn.execute("SELECT COUNT(*), COUNT(DISTINCT entry_id) FROM memory_live_rows "
                            "WHERE table_name = 'buffer_entries'").fetchone()  # fmt: skip
        in_file = game.execute("SELECT COUNT(*) FROM buffer_entries").fetchone()[0]
    assert held == (in_file, in_file)
    assert_same_as_fresh_import(db, save, fresh_sqlite("fresh"))


def new_game_over(save: Path, db: Path, *, same_inode: bool) -> None:
    """Another game of the same world at `save`, fewer rows: moved over the old file (a new
    inode) or written into it (the inode a filesystem may hand a new file after an unlink)."""
    other = save.with_name("other.sqlite")
    manage("omnia_standin", str(other), "--rows", "60", "--rate", "0", "--seed", "9",
           env=isolated_env(db))  # fmt: skip
    inode = save.stat().st_ino
    if same_inode:
        with save.open("r+b") as old:
            old.truncate(0)
            old.write(other.read_bytes())
        other.unlink()
    else:
        other.replace(save)
    assert (save.stat().st_ino == inode) is same_inode


@pytest.mark.parametrize(
    ("same_inode", "why"),
    [
        (False, "another file at the path"),
        (True, "buffer_entries: other rows stand where the rows applied were"),
    ],
)
def test_a_new_game_at_the_path_replaces_the_old_one(fresh_sqlite, tmp_path, same_inode, why):
    db, save = fresh_sqlite("followed"), tmp_path / "game.sqlite"
    manage("omnia_standin", str(save), "--rows", "300", "--rate", "0", env=isolated_env(db))
    manage("follow_omnia", str(save), "--once", env=isolated_env(db))
    old_game = live_saves(db)["game"]
    new_game_over(save, db, same_inode=same_inode)
    again = manage("follow_omnia", str(save), "--once", env=isolated_env(db))
    assert f"batch 1: replaced ({why}), +62 buffer_entries" in again.stderr
    assert live_saves(db)["game"] != old_game  # a save of its own, under the old one's name
    assert_same_as_fresh_import(db, save, fresh_sqlite("fresh"))


def live_saves(db: Path) -> dict[str, int]:
    with sqlite3.connect(db) as conn:
        return dict(conn.execute("SELECT name, id FROM memory_saves WHERE retired_at IS NULL"))


def test_follow_refuses_what_is_not_an_omnia_save(fresh_sqlite, tmp_path):
    db = fresh_sqlite("followed")
    missing = manage("follow_omnia", str(tmp_path / "nope.sqlite"), "--once",
                     env=isolated_env(db), check=False)  # fmt: skip
    assert missing.returncode == 2 and "no such file" in missing.stderr
    bad = manage("follow_omnia", str(tmp_path / "x"), "--interval", "0", env=isolated_env(db),
                 check=False)  # fmt: skip
    assert bad.returncode == 2 and "--interval" in bad.stderr
