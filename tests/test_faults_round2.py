"""Faults, second round (issue 29): one big field crashes nothing, an export destroys
nothing, every refusal is one line with exit 2, and JSON is read strictly at every door.

Whatever might kill the process (the leak scanner's C automaton) runs in a child process, so
a SIGSEGV fails the test instead of taking pytest down with it.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import sqlite3
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.cli import isolated_env, manage
from tests.helpers import ROOT, big_world

pytestmark = pytest.mark.faults

MB = 1_000_000


def run_python(code: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


# --- the scanner is safe on any input -----------------------------------------------------------

SCAN_BIG = """
from memory.engine.leaks.scanner import LeakWorld, PrivateValue, build_leak_index, scan_text

size = {size}
secret = "Secret " + "x" * size
world = LeakWorld(
    object_ids=frozenset({{"w", "ann", "bo"}}),
    true_names={{"ann": "Ann", "bo": "Bo " + "y" * size}},
    aliases={{"ann": {{}}, "bo": {{}}}},
    private_values=(PrivateValue("w", "description", secret),),
)
index = build_leak_index(world)
text = "Ann says: " + secret + ". " + "z" * size + " Bo " + "y" * size
found = scan_text(index, "ann", text)
print(sorted((f.kind, f.start, f.end - f.start) for f in found))
del index
print("done")
"""


@pytest.mark.pure
@pytest.mark.parametrize("size", [MB, 10 * MB], ids=["1MB", "10MB"])
def test_scanner_big_patterns_and_text_do_not_crash(size: int) -> None:
    # A pattern of a million characters made pyahocorasick free its trie one C frame per
    # character: SIGSEGV (exit -11) when the index was dropped.
    done = run_python(SCAN_BIG.format(size=size))
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])
    lines = done.stdout.splitlines()
    assert lines[-1] == "done"
    start = len("Ann says: ")
    unknown = len("Ann says: ") + 7 + size + 2 + size + 1
    assert lines[0] == str(
        [("private_attribute", start, 7 + size), ("unknown_name", unknown, 3 + size)]
    )


@pytest.mark.pure
def test_scanner_long_keys_find_what_the_automaton_finds(monkeypatch) -> None:
    from memory.engine.leaks import scanner
    from memory.engine.leaks.naive import scan_text_naive

    world = scanner.LeakWorld(
        object_ids=frozenset({"w", "ann", "bob"}),
        true_names={"ann": "Ann", "bob": "Bob Stone"},
        aliases={"ann": {}, "bob": {}},
        private_values=(scanner.PrivateValue("w", "code", "red red"),),
    )
    text = "Bob Stone said red red red to bob; Ann heard Bob."
    monkeypatch.setattr(scanner, "MAX_AUTOMATON_KEY", 4)  # every key but "\x01w\x01" is long
    index = scanner.build_leak_index(world)
    assert len(index.long_keys) == 4
    assert scanner.scan_text(index, "ann", text) == scan_text_naive(world, "ann", text)


# --- the commands' doors: one line, exit 2, nothing written ---------------------------------------

FIXTURES = ROOT / "tests" / "fixtures" / "omnia"
SCENARIO = FIXTURES / "omnia-scenario-talking-room-fadea41.json"
OMNIA_FILE = FIXTURES / "omnia-head-tavern.sqlite"


def refused_in_one_line(done: subprocess.CompletedProcess, *words: str) -> None:
    assert done.returncode == 2, (done.returncode, done.stderr[-3000:])
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr[-3000:]
    assert "Traceback" not in done.stderr
    for word in words:
        assert word in lines[0], lines[0]


def saves_in(database: Path) -> list[str]:
    with sqlite3.connect(database) as conn:
        return [r[0] for r in conn.execute("SELECT name FROM memory_saves ORDER BY name")]


def scenario_text(tmp_path: Path, name: str, edit) -> Path:
    """The talking-room scenario as text, changed by `edit(text) -> text`."""
    path = tmp_path / f"{name}.json"
    path.write_text(edit(SCENARIO.read_text(encoding="utf-8")), encoding="utf-8")
    return path


def scenario_doc(tmp_path: Path, name: str, edit) -> Path:
    """The talking-room scenario, its document changed in place by `edit(doc)`."""
    doc = json.loads(SCENARIO.read_text(encoding="utf-8"))
    edit(doc)
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


BAD_NAMES = ["a/b", "x y", "", ".hidden", "tail-", "ｄｅｍｏ", "n" * 65, "semi;colon", "new\nline"]


@pytest.mark.terminal
@pytest.mark.parametrize("command", ["import_omnia", "load_world"])
def test_a_bad_save_name_is_one_line_exit_2(command: str, tmp_path, fresh_sqlite) -> None:
    # import_omnia --as 'a/b' and load_world --as 'x y' were tracebacks with exit 1; --as ''
    # fell back to the file's name silently.
    database = fresh_sqlite("names")
    env = isolated_env(database)
    source = OMNIA_FILE if command == "import_omnia" else SCENARIO
    for name in BAD_NAMES:
        done = manage(command, str(source), "--as", name, env=env, check=False)
        refused_in_one_line(done, "is not a save name")
    assert saves_in(database) == []


@pytest.mark.terminal
def test_scenario_json_is_read_strictly(tmp_path, fresh_sqlite) -> None:
    database = fresh_sqlite("strict")
    env = isolated_env(database)
    fixes = {
        "5000-digit integer": lambda t: t.replace(
            '"id": "talking-room"', '"id": "talking-room", "n": ' + "9" * 5000, 1
        ),
        "NaN": lambda t: t.replace('"id": "talking-room"', '"id": "talking-room", "n": NaN', 1),
        "Infinity": lambda t: t.replace(
            '"id": "talking-room"', '"id": "talking-room", "n": -Infinity', 1
        ),
        "duplicate key": lambda t: t.replace(
            '"id": "talking-room"', '"id": "talking-room", "id": "again"', 1
        ),
    }
    words = {
        "5000-digit integer": "5,000 digits; the limit is 19",
        "NaN": "NaN is not a JSON number",
        "Infinity": "Infinity is not a JSON number",
        "duplicate key": "duplicate key 'id' in one object",
    }
    for case, edit in fixes.items():
        path = scenario_text(tmp_path, case.replace(" ", "-"), edit)
        done = manage("load_world", str(path), env=env, check=False)
        refused_in_one_line(done, words[case])

    def dangling(doc: dict) -> None:
        doc["entities"][0]["aliases"] = {"nobody-here": "the ghost"}

    done = manage(
        "load_world", str(scenario_doc(tmp_path, "dangling", dangling)), env=env, check=False
    )
    refused_in_one_line(done, "target 'nobody-here' is not an object of this scenario")
    assert saves_in(database) == []


# --- 1 MB and 10 MB fields through every door: refused in one line, never a crash ---------------

SIZES = pytest.mark.parametrize("size", [MB, 10 * MB], ids=["1MB", "10MB"])


@pytest.mark.terminal
@SIZES
def test_a_big_scenario_field_is_refused_in_one_line(size: int, tmp_path, fresh_sqlite) -> None:
    # A 1 MB description loaded, then run_projections died with SIGSEGV (exit 139).
    database = fresh_sqlite("bigscenario")
    env = isolated_env(database)

    def big_description(doc: dict) -> None:
        doc["description"] = "A " + "x" * size

    def big_memory(doc: dict) -> None:
        doc["entities"][0]["initialMemories"][0]["intent"]["content"] = "y" * size

    for edit in (big_description, big_memory):
        path = scenario_doc(tmp_path, edit.__name__, edit)
        done = manage("load_world", str(path), env=env, check=False)
        refused_in_one_line(done, "characters long; the limit is 65,536")
    assert saves_in(database) == []
    done = manage("run_projections", env=env, check=False)
    assert done.returncode == 0, done.stderr


def omnia_copy(tmp_path: Path, name: str, *statements: tuple[str, tuple]) -> Path:
    path = tmp_path / f"{name}.sqlite"
    shutil.copy(OMNIA_FILE, path)
    with sqlite3.connect(path) as conn:
        for sql, params in statements:
            conn.execute(sql, params)
    conn.close()
    return path


@pytest.mark.terminal
@SIZES
def test_a_big_omnia_field_is_refused_in_one_line(size: int, tmp_path, fresh_sqlite) -> None:
    # A 2 MB `name` attribute imported with --fold died with SIGSEGV in the leak scanner.
    database = fresh_sqlite("bigomnia")
    env = isolated_env(database)
    big = "N" * size
    intent = json.dumps({"type": "monologue", "content": big, "actorId": "x", "targetIds": []})
    cases = {
        "name": (
            "UPDATE attributes SET value = ? WHERE name = 'name' AND rowid = "
            "(SELECT MIN(rowid) FROM attributes WHERE name = 'name')",
            (big,),
        ),
        "intent": ("UPDATE buffer_entries SET intent_json = ? WHERE rowid = 1", (intent,)),
        "ledger": ("UPDATE ledger_entries SET content = ? WHERE rowid = 1", (big,)),
    }
    for case, statement in cases.items():
        path = omnia_copy(tmp_path, case, statement)
        done = manage("import_omnia", str(path), "--fold", env=env, check=False)
        refused_in_one_line(done, "characters long; the limit is 65,536")
    assert saves_in(database) == []


@pytest.mark.terminal
def test_omnia_intent_json_is_read_strictly(tmp_path, fresh_sqlite) -> None:
    database = fresh_sqlite("strictomnia")
    env = isolated_env(database)
    with sqlite3.connect(OMNIA_FILE) as conn:
        intent = conn.execute("SELECT intent_json FROM buffer_entries WHERE rowid = 1").fetchone()[
            0
        ]
    conn.close()
    doc = json.loads(intent)
    twice = intent[:-1] + f', "actorId": {json.dumps(doc["actorId"])}}}'
    nan = intent[:-1] + ', "modifiers": [NaN]}'
    for case, text, words in (
        ("twice", twice, "duplicate key 'actorId'"),
        ("nan", nan, "NaN"),
    ):
        path = omnia_copy(
            tmp_path, case, ("UPDATE buffer_entries SET intent_json = ? WHERE rowid = 1", (text,))
        )
        done = manage("import_omnia", str(path), env=env, check=False)
        refused_in_one_line(done, words)
    assert saves_in(database) == []


def _popen(*args: str, env: dict[str, str]) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.mark.terminal
def test_two_imports_under_one_name_at_once_wait_their_turn(tmp_path, fresh_sqlite) -> None:
    # SQLite answered the second "database is locked" with a traceback, 3 times in 5: a
    # transaction that read first cannot wait for the lock. Each import now takes the write
    # lock first, waits its turn, and the loser is refused (or told nothing changed).
    one, two = big_world(tmp_path / "one.sqlite", 20_000), big_world(tmp_path / "two.sqlite", 5)
    with sqlite3.connect(two) as conn:
        conn.execute("UPDATE objects SET id = 'big-world-2' WHERE id = 'big-world'")
        conn.execute("UPDATE objects SET world_id = 'big-world-2' WHERE world_id = 'big-world'")
    conn.close()
    for attempt in range(5):
        database = fresh_sqlite(f"race{attempt}")
        env = isolated_env(database)
        children = [_popen("import_omnia", str(p), "--as", "race", env=env) for p in (one, two)]
        outcomes = [(child.wait(120), child.stderr.read()) for child in children]
        for child in children:
            child.stdout.close()
            child.stderr.close()
        assert sorted(code for code, _ in outcomes) == [0, 2], outcomes
        refused = next(err for code, err in outcomes if code == 2)
        assert "Traceback" not in refused and len(refused.strip().splitlines()) == 1, refused
        assert "already holds" in refused
        assert saves_in(database) == ["race"]


# --- export cannot destroy ------------------------------------------------------------------------


@pytest.mark.terminal
def test_export_refuses_an_existing_file_without_force_and_keeps_its_mode_with_it(
    tmp_path, fresh_sqlite
) -> None:
    env = isolated_env(fresh_sqlite("export"))
    manage("import_omnia", str(OMNIA_FILE), env=env)
    notes = tmp_path / "notes.txt"
    notes.write_text("a file someone cares about\n")
    notes.chmod(0o600)
    done = manage("export_omnia", str(notes), env=env, check=False)
    refused_in_one_line(done, "exists: add --force to replace it")
    assert notes.read_text() == "a file someone cares about\n"
    manage("export_omnia", str(notes), "--force", env=env)
    with sqlite3.connect(notes) as conn:
        assert conn.execute("SELECT COUNT(*) FROM buffer_entries").fetchone()[0] == 30
    conn.close()
    assert notes.stat().st_mode & 0o777 == 0o600
    assert sorted(p.name for p in tmp_path.iterdir()) == ["export.sqlite3", "notes.txt"]


@pytest.mark.terminal
def test_export_never_overwrites_the_store_itself(tmp_path, fresh_sqlite) -> None:
    # export_omnia to DATABASE_URL's path turned a 540 MB store into a 100 KB omnia file.
    database = fresh_sqlite("store")
    env = isolated_env(database)
    manage("import_omnia", str(OMNIA_FILE), env=env)
    target = database
    before = target.read_bytes()
    # Another name for the same file is the same file.
    alias = tmp_path / "elsewhere"
    alias.mkdir()
    link = alias / "store-link.sqlite3"
    link.symlink_to(target)
    for path in (target, link):
        done = manage("export_omnia", str(path), "--force", env=env, check=False)
        refused_in_one_line(done, "is the inspector's own database")
    assert target.read_bytes() == before
    assert saves_in(database) == ["omnia-head-tavern"]


@pytest.mark.django_db
def test_export_refuses_a_file_this_process_has_open(tmp_path, activate_save) -> None:
    from django.core.management import call_command
    from django.core.management.base import CommandError

    call_command("import_omnia", str(OMNIA_FILE))
    other = tmp_path / "in-use.sqlite3"
    conn = sqlite3.connect(other)
    conn.execute("CREATE TABLE kept (x)")
    conn.commit()
    try:
        with pytest.raises(CommandError, match="a file this process has open"):
            call_command("export_omnia", str(other), "--force")
        assert conn.execute("SELECT name FROM sqlite_master").fetchall() == [("kept",)]
    finally:
        conn.close()


@pytest.mark.terminal
def test_export_refuses_what_is_not_a_regular_file(tmp_path, fresh_sqlite) -> None:
    env = isolated_env(fresh_sqlite("special"))
    manage("import_omnia", str(OMNIA_FILE), env=env)
    # A FIFO of the test's own, never /dev/null: main's export replaced /dev/null itself with
    # its rename (as root), breaking every process on the machine that wrote to it.
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for path in (str(fifo), str(tmp_path)):
        done = manage("export_omnia", path, "--force", env=env, check=False)
        refused_in_one_line(done, "not a regular file")
    assert stat.S_ISFIFO(fifo.stat().st_mode)


# --- the API's write bodies ---------------------------------------------------------------------

ALIAS_URL = "/api/saves/cast/viewers/alice/aliases/bob"
MEMORY_URL = "/api/saves/cast/viewers/alice/memories"


@pytest.fixture
def token_header(staff) -> dict:
    from memory.tokens import issue_token

    return {"Authorization": f"Bearer {issue_token(staff, 'faults')[1]}"}


def _labels() -> list:
    from memory.models import WorldObject

    return list(WorldObject.objects.filter(id="alice").values_list("aliases_json", flat=True))


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("body", "content_type", "status", "words"),
    [
        ('{"label": "Gareth"}', "text/plain", 415, "application/json, not text/plain"),
        ('{"label": "Gareth"}', "", 415, "application/json"),
        ('{"label": "Gareth"}', "application/x-www-form-urlencoded", 415, "application/json"),
        ('{"label": "Gareth"}'.encode("utf-16"), "application/json", 400, "not UTF-8"),
        ('{"label": "Gareth"}'.encode("utf-16"), "application/json; charset=utf-16", 415, "UTF-8"),
        ('{"label": "Gareth"}', "application/json; charset=latin-1", 415, "UTF-8"),
        ('{"label": "Gareth", "label": "Bob"}', "application/json", 400, "duplicate key 'label'"),
        ('{"label": NaN}', "application/json", 400, "NaN"),
    ],
    ids=["text-plain", "no-type", "form", "utf16", "utf16-charset", "latin1", "dup-key", "nan"],
)
def test_api_bodies_are_json_in_utf8_read_strictly(
    client, cast, token_header, body, content_type, status, words
) -> None:
    before = _labels()
    r = client.put(ALIAS_URL, body, content_type=content_type, headers=token_header)
    assert r.status_code == status, r.content
    answer = r.json()
    assert set(answer) == {"detail", "code", "field"} and answer["field"] == "body", answer
    assert words in answer["detail"], answer
    assert _labels() == before


@pytest.mark.django_db
@pytest.mark.parametrize("size", [MB, 10 * MB], ids=["1MB", "10MB"])
def test_api_big_fields_are_refused_with_the_field_named(client, cast, token_header, size) -> None:
    from memory.models import BufferEntry

    before = (_labels(), BufferEntry.objects.count())
    big = "x" * size
    intent = {"type": "dialogue", "originalText": big, "description": big,
              "actorId": "alice", "targetIds": []}  # fmt: skip
    for url, method, payload, field in (
        (ALIAS_URL, client.put, {"label": big}, "label"),
        (MEMORY_URL, client.post, {"intent": intent}, "intent"),
        (MEMORY_URL, client.post, {"intent": CHEST_INTENT, "location_id": big}, "location_id"),
    ):
        r = method(url, json.dumps(payload), content_type="application/json", headers=token_header)
        if size > 2_621_440:  # past DATA_UPLOAD_MAX_MEMORY_SIZE: the body itself is refused
            assert r.status_code == 413, (url, field, r.status_code)
            continue
        assert r.status_code == 422, (url, field, r.content[:300])
        assert field in (r.json()["field"] or ""), r.json()
        # the alias label has its own, tighter bound (200 characters)
        assert "65,536" in r.json()["detail"] or "at most 200" in r.json()["detail"], r.json()
    assert (_labels(), BufferEntry.objects.count()) == before


CHEST_INTENT = {"type": "action", "originalText": "x", "description": "opened the chest",
                "actorId": "bob", "targetIds": []}  # fmt: skip


@pytest.mark.django_db
def test_api_remember_refuses_an_actor_that_does_not_exist(client, cast, token_header) -> None:
    from memory.models import BufferEntry

    before = BufferEntry.objects.count()
    intent = {**CHEST_INTENT, "actorId": "nobody"}
    r = client.post(
        MEMORY_URL, json.dumps({"intent": intent}), content_type="application/json",
        headers=token_header,
    )  # fmt: skip
    assert r.status_code == 422, r.content
    assert r.json()["field"] == "intent.actorId"
    assert "no object with id 'nobody'" in r.json()["detail"]
    assert BufferEntry.objects.count() == before
    r = client.post(
        MEMORY_URL, json.dumps({"intent": CHEST_INTENT}), content_type="application/json",
        headers=token_header,
    )  # fmt: skip
    assert r.status_code == 201, r.content


# --- logins and save names ---------------------------------------------------------------------


@pytest.mark.terminal
def test_ensure_login_refuses_an_empty_username_or_password(fresh_sqlite) -> None:
    database = fresh_sqlite("logins")
    env = isolated_env(database)
    for args, words in (
        (("--username", "", "--password", "pw-long-enough"), "--username must not be empty"),
        (("--username", "  ", "--password", "pw-long-enough"), "--username must not be empty"),
        (("--username", "a b", "--password", "pw-long-enough"), "letters, digits"),
        (("--username", "qa", "--password", ""), "--password must not be empty"),
        (("--username", "qa", "--password", "   "), "--password must not be empty"),
    ):
        refused_in_one_line(manage("ensure_login", *args, env=env, check=False), words)
    with sqlite3.connect(database) as conn:
        assert conn.execute("SELECT COUNT(*) FROM auth_user").fetchone()[0] == 0
    conn.close()
    manage("ensure_login", "--username", "qa", "--password", "omnia-qa", env=env)


@pytest.mark.django_db
def test_save_names_are_unique_as_folded(activate_save) -> None:
    from django.db import IntegrityError, transaction

    from memory.engine.errors import Conflict
    from memory.models import Save
    from memory.worlds.scenario import load_world

    doc = json.loads(SCENARIO.read_text(encoding="utf-8"))
    assert load_world(doc, as_name="demo").save == "demo"
    other = {**doc, "name": "Another playthrough"}
    for name in ("Demo", "DEMO"):
        with pytest.raises(Conflict, match="save 'demo' already holds"):
            load_world(other, as_name=name)
        # the same content under another case is the save there is
        assert load_world(doc, as_name=name).unchanged
    assert list(Save.objects.values_list("name", flat=True)) == ["demo"]
    # --replace under another case keeps the name there is
    assert load_world(other, as_name="DEMO", replace=True).save == "demo"
    assert list(Save.objects.live().values_list("name", flat=True)) == ["demo"]
    # and the database holds it, whichever door forgets to ask
    with pytest.raises(IntegrityError), transaction.atomic():
        Save.objects.create(name="dEmO", kind="scenario")


@pytest.mark.terminal
def test_load_world_waits_for_another_writer_instead_of_a_traceback(fresh_sqlite) -> None:
    # load_world while a follower imported: "database is locked", exit 1. Another process holds
    # the write lock (as a follower's batch does) and commits while load_world waits.
    import threading
    import time

    database = fresh_sqlite("writer")
    env = isolated_env(database)
    holder = sqlite3.connect(database, isolation_level=None, check_same_thread=False)
    holder.execute("BEGIN IMMEDIATE")
    holder.execute("UPDATE memory_saves SET name = name")

    def commit_later() -> None:
        time.sleep(4)
        holder.execute("INSERT INTO django_migrations (app, name, applied) "
                       "VALUES ('faults', 'writer', '2026-01-01')")  # fmt: skip
        holder.execute("COMMIT")

    thread = threading.Thread(target=commit_later)
    thread.start()
    try:
        done = manage("load_world", str(SCENARIO), "--as", "beside", env=env, check=False)
    finally:
        thread.join()
        holder.close()
    assert done.returncode == 0, done.stderr[-3000:]
    assert saves_in(database) == ["beside"]


@pytest.mark.terminal
@SIZES
def test_a_followed_game_writing_a_big_field_is_refused_in_one_line(
    size: int, tmp_path, fresh_sqlite
) -> None:
    database = fresh_sqlite("follow")
    env = isolated_env(database)
    game = tmp_path / "game.sqlite"
    shutil.copy(OMNIA_FILE, game)
    manage("follow_omnia", str(game), "--once", env=env)
    with sqlite3.connect(game) as conn:
        conn.row_factory = sqlite3.Row
        row = dict(conn.execute("SELECT * FROM buffer_entries ORDER BY rowid LIMIT 1").fetchone())
        intent = json.loads(row["intent_json"])
        intent["content"] = "z" * size
        row.update(id="big-row", intent_json=json.dumps(intent))
        marks = ", ".join("?" * len(row))
        conn.execute(
            f"INSERT INTO buffer_entries ({', '.join(row)}) VALUES ({marks})", list(row.values())
        )
    conn.close()
    done = manage("follow_omnia", str(game), "--once", env=env, check=False)
    refused_in_one_line(done, "row id=big-row", "the limit is 65,536")
    with sqlite3.connect(database) as conn:
        assert conn.execute(
            "SELECT COUNT(*) FROM buffer_entries WHERE id = 'big-row'"
        ).fetchone() == (0,)
    conn.close()
    assert manage("run_projections", env=env).returncode == 0


# --- one save's failure is that save's ------------------------------------------------------------


@pytest.mark.django_db
def test_a_save_whose_upkeep_fails_is_named_and_the_others_are_updated(monkeypatch) -> None:
    # One save's scan crashing stopped the cycle for every save (run_projections exit 139).
    from django.core.management import call_command
    from django.core.management.base import CommandError

    from memory.active_save import use
    from memory.engine import upkeep
    from memory.engine.saves import current_save_name, get_save
    from memory.models import MemorySession
    from memory.worlds.scenario import load_world

    doc = json.loads(SCENARIO.read_text(encoding="utf-8"))
    load_world(doc, as_name="a-broken")
    load_world({**doc, "name": "Second"}, as_name="b-fine")
    real = upkeep.run_upkeep

    def failing_for_one(*args, **kwargs):
        if current_save_name() == "a-broken":
            raise RuntimeError("a helper died on this save's data")
        return real(*args, **kwargs)

    monkeypatch.setattr(upkeep, "run_upkeep", failing_for_one)
    with pytest.raises(CommandError) as refused:
        call_command("run_projections")
    assert str(refused.value) == (
        "upkeep failed for 1 save(s), the others were updated: "
        "a-broken: RuntimeError: a helper died on this save's data"
    )
    with use(get_save("b-fine")):
        assert MemorySession.objects.exists()
    with use(get_save("a-broken")):
        assert not MemorySession.objects.exists()


@pytest.mark.django_db
def test_a_save_whose_cycle_failed_is_a_problem_on_its_pages_and_healthz_is_degraded(
    monkeypatch, reader_client, client
) -> None:
    # Issue 29: the scanner crashing stopped the cycle and nothing said which save; /healthz
    # said ok while the findings were stale.
    from django.core.management import call_command
    from django.core.management.base import CommandError

    from memory.active_save import use
    from memory.engine import upkeep
    from memory.engine.saves import current_save_name, get_save
    from memory.models import ProjectionProblem
    from memory.worlds.scenario import load_world

    doc = json.loads(SCENARIO.read_text(encoding="utf-8"))
    load_world(doc, as_name="a-broken")
    load_world({**doc, "name": "Second"}, as_name="b-fine")
    real = upkeep.stored.refresh

    def scanner_dies_on_one(*args, **kwargs):
        if current_save_name() == "a-broken":
            raise MemoryError("the scanner died on this data")
        return real(*args, **kwargs)

    monkeypatch.setattr(upkeep.stored, "refresh", scanner_dies_on_one)
    with pytest.raises(CommandError):
        call_command("run_projections", stdout=io.StringIO())
    reason = "the projection cycle failed: MemoryError: the scanner died on this data"
    with use(get_save("a-broken")):
        assert list(ProjectionProblem.objects.values_list("table_name", "row_ref", "reason")) == [
            ("upkeep", "projection cycle", reason)
        ]
    with use(get_save("b-fine")):
        assert not ProjectionProblem.objects.exists()
    overview = reader_client.get("/").content.decode()
    broken = overview[overview.index('data-save="a-broken"') : overview.index('data-save="b-fine"')]
    assert f'<dd class="cycle-failure" role="status"><strong>{reason}</strong>' in broken
    assert "cycle-failure" not in overview[overview.index('data-save="b-fine"') :]
    page = reader_client.get("/saves/a-broken/").content.decode()
    assert f'<li class="cycle-failure"><strong>{reason}</strong>' in page
    health = client.get("/healthz").json()
    assert (health["status"], health["problems"], health["projection_lag_rows"]) == (
        "degraded",
        1,
        0,
    )
    # Folded, not rescanned: a-broken's viewers' findings are stale.
    with use(get_save("a-broken")):
        from memory.engine.leaks.standing import standing

        behind = len(standing().behind)
    assert behind > 0 and health["leak_viewers_stale"] == behind
    monkeypatch.setattr(upkeep.stored, "refresh", real)
    call_command("run_projections", stdout=io.StringIO())
    with use(get_save("a-broken")):
        assert not ProjectionProblem.objects.exists()
    health = client.get("/healthz").json()
    assert (health["status"], health["problems"], health["leak_viewers_stale"]) == ("ok", 0, 0)
    assert "cycle-failure" not in reader_client.get("/").content.decode()
