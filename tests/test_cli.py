"""The command line as a person meets it: settings, pipes, --help, progress, plain messages."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from datetime import UTC, datetime
from io import StringIO
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.core.checks import WARNING, run_checks
from django.core.management import call_command, get_commands, load_command_class
from django.core.management.base import CommandError

from memory.models import Save
from memory.roles import ADMIN_PERMISSION, EDIT_PERMISSION, READ_PERMISSION
from tests.cli import ROOT, isolated_env, long_scenario, manage, manage_on_a_terminal
from tests.helpers import table_rows

MISSING_KEY = (
    "OMNIA_SECRET_KEY is not set: set OMNIA_DEBUG=1 for local use, "
    "or OMNIA_SECRET_KEY in production\n"
)
OUR_COMMANDS = sorted(name for name, app in get_commands().items() if app == "memory")


@pytest.mark.terminal
def test_a_command_without_settings_exits_2_with_the_one_line_fix() -> None:
    done = manage("render_buffer", "npc-maren", env=isolated_env(), check=False)
    assert (done.returncode, done.stdout, done.stderr) == (2, "", MISSING_KEY)


@pytest.mark.terminal
def test_help_without_settings_gives_the_same_line_not_a_traceback() -> None:
    done = manage("scan_leaks", "--help", env=isolated_env(), check=False)
    assert (done.returncode, done.stderr) == (2, MISSING_KEY)


@pytest.mark.terminal
@pytest.mark.parametrize(
    ("variable", "value", "message"),
    [
        ("OMNIA_DEBUG", "maybe", "OMNIA_DEBUG='maybe' is not a boolean (use 1/0, true/false)\n"),
        (
            "OMNIA_EPISODE_GAP_MINUTES",
            "soon",
            "OMNIA_EPISODE_GAP_MINUTES='soon' is not an integer\n",
        ),
        (
            "DATABASE_URL",
            "mysqlish://x",
            "DATABASE_URL is not a database URL (Scheme 'mysqlish://' is unknown): use "
            "sqlite:///path/to/file.sqlite3 or postgres://user@host:5432/name\n",
        ),
    ],
)
def test_a_bad_setting_is_one_line_naming_the_variable(variable, value, message) -> None:
    env = isolated_env(OMNIA_SECRET_KEY="a-production-key", **{variable: value})
    done = manage("render_buffer", "npc-maren", env=env, check=False)
    assert (done.returncode, done.stdout, done.stderr) == (2, "", message)


@pytest.fixture(scope="module")
def long_world(tmp_path_factory, migrated_sqlite) -> tuple[dict[str, str], str]:
    """A database of its own holding one NPC with 4,000 memories: its buffer (over 200 KB)
    is more than a pipe holds, so a reader that stops early really closes the pipe on it."""
    where = tmp_path_factory.mktemp("long")
    shutil.copy(migrated_sqlite, where / "long.sqlite3")
    env = isolated_env(where / "long.sqlite3")
    npc = long_scenario(where / "long.json", 4000)
    manage("load_world", str(where / "long.json"), env=env)
    return env, npc


def _piped(command: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    """`manage.py … | head -1` in bash, reporting manage.py's own exit status on stderr."""
    return subprocess.run(
        ["bash", "-c", f'{command} | head -1; echo "status ${{PIPESTATUS[0]}}" >&2'],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.terminal
def test_render_buffer_into_head_ends_quietly(long_world) -> None:
    env, npc = long_world
    done = _piped(f"python manage.py render_buffer {npc}", {**env, "PATH": _venv_path(env)})
    assert done.stdout == "Thought number 0 about the long hall.\n"
    # Killed-by-SIGPIPE's status, as `cat` or `yes` would report it; not a word on stderr.
    assert done.stderr == "status 141\n"


@pytest.mark.terminal
def test_jsonl_into_head_ends_quietly_too(long_world) -> None:
    env, npc = long_world
    done = _piped(
        f"python manage.py render_buffer {npc} --format jsonl", {**env, "PATH": _venv_path(env)}
    )
    assert (
        done.stdout == '{"entry_id": "m-00000", "line": "Thought number 0 about the long hall."}\n'
    )
    assert done.stderr == "status 141\n"


@pytest.mark.terminal
def test_a_reader_that_reads_everything_sees_exit_0(long_world) -> None:
    env, npc = long_world
    done = subprocess.run(
        ["bash", "-c", f"python manage.py render_buffer {npc} | wc -l"],
        cwd=ROOT,
        env={**env, "PATH": _venv_path(env)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert (done.stdout.strip(), done.stderr, done.returncode) == ("4000", "", 0)


def _venv_path(env: dict[str, str]) -> str:
    """PATH with this interpreter's directory first, so `python` in a shell line is ours."""
    return f"{Path(sys.executable).parent}:{env.get('PATH', '')}"


def test_the_checks_our_commands_leave_to_manage_py_check_are_clean() -> None:
    """Our commands check only the models (start-up: the URL checks import the whole web);
    every other check, the URLconf and templates included, is run here and must be clean."""
    assert {
        tuple(load_command_class("memory", n).requires_system_checks) for n in OUR_COMMANDS
    } == {("models",)}
    found = [
        f"{issue.id}: {issue.msg}"
        for issue in run_checks(include_deployment_checks=False)
        # pytest-django's fail-on-invalid-variable object stands in string_if_invalid here.
        if issue.id != "templates.E002" and issue.level >= WARNING
    ]
    assert found == []


@pytest.mark.parametrize("name", OUR_COMMANDS)
def test_every_command_help_has_one_line_and_an_example(name: str) -> None:
    command = load_command_class("memory", name)
    assert "\n" not in command.help and len(command.help) <= 100, command.help
    text = command.create_parser("manage.py", name).format_help()
    description = text.split("\n\n")[1]
    assert description == command.help
    examples = text.split("\nexamples:\n")[1].splitlines()
    assert examples and all(line.startswith(f"  manage.py {name}") for line in examples)


@pytest.mark.terminal
def test_help_on_the_command_line_ends_with_examples(tmp_path) -> None:
    done = manage("render_buffer", "--help", env=isolated_env(tmp_path / "db.sqlite3"))
    assert done.stdout.endswith(
        "examples:\n"
        "  manage.py render_buffer npc-maren\n"
        "  manage.py render_buffer npc-maren --reading corrected\n"
        "  manage.py render_buffer npc-maren --format jsonl | head -3\n"
    )


# Each long command, in an order that gives each one work to do.
LONG_COMMANDS = [
    (("load_world", "{scenario}"), "load: "),
    (("import_omnia", "{save}", "--fold"), "fold: "),
    (("run_projections",), "fold: "),
    (("rebuild_projections",), "rebuild: "),
    (("rebuild_projections", "--verify"), "verify: "),
    (("scan_leaks", "--fresh", "--save", "long"), "scan: "),
    # --force: both runs write one file (a second without it is refused: issue 29)
    (("export_omnia", "{out}", "--world", "long-world", "--force"), "export: "),
]


@pytest.mark.terminal
def test_long_work_shows_a_bar_on_a_terminal_and_nothing_in_a_pipe(tmp_path, fresh_sqlite) -> None:
    scenario = tmp_path / "long.json"
    long_scenario(scenario, 300)
    places = {
        "scenario": str(scenario),
        "save": str(ROOT / "tests/fixtures/omnia/omnia-head-tavern.sqlite"),
        "out": str(tmp_path / "out.sqlite"),
    }
    on_terminal = isolated_env(fresh_sqlite("terminal"))
    in_pipe = isolated_env(fresh_sqlite("pipe"))
    for args, bar in LONG_COMMANDS:
        args = tuple(arg.format(**places) for arg in args)
        status, seen = manage_on_a_terminal(*args, env=on_terminal)
        assert status == 0 and bar in seen, (args, seen)
        assert "Traceback" not in seen
        piped = manage(*args, env=in_pipe)
        assert piped.stderr == "", (args, piped.stderr)


@pytest.mark.django_db
def test_reimport_says_nothing_changed_and_when(fixtures_dir) -> None:
    save = str(fixtures_dir / "omnia-head-tavern.sqlite")
    first = StringIO()
    call_command("import_omnia", save, stdout=first)
    assert first.getvalue().splitlines()[0] == (
        f"{save}: world tavern-world (v2): new save 'omnia-head-tavern', 71 rows (objects 9, "
        "attributes 19, attribute acl 7, buffer entries 30, ledger entries 3, "
        "ledger involved entities 3)"
    )
    when = Save.objects.get(name="omnia-head-tavern").imported_at
    before = table_rows()
    again = StringIO()
    call_command("import_omnia", save, stdout=again)
    assert again.getvalue() == (
        f"{save}: already imported as 'omnia-head-tavern' on {when:%Y-%m-%d %H:%M} UTC; "
        "nothing changed\n"
    )
    assert table_rows() == before


@pytest.mark.django_db
def test_a_changed_scenario_is_refused_then_kept_beside_or_swapped_in(fixtures_dir) -> None:
    older = str(fixtures_dir / "omnia-scenario-talking-room-c292626.json")
    newer = str(fixtures_dir / "omnia-scenario-talking-room-fadea41.json")
    out = StringIO()
    call_command("load_world", older, "--as", "room", stdout=out)
    before = table_rows()
    with pytest.raises(CommandError) as refused:
        call_command("load_world", newer, "--as", "room", stdout=out)
    assert refused.value.returncode == 2
    assert str(refused.value).startswith(
        "refused, nothing loaded: save 'room' already holds "
        "omnia-scenario-talking-room-c292626.json (imported "
    )
    assert str(refused.value).endswith(
        f"not {newer}. Keep both with --as NEW-NAME, or swap this file in with --replace"
    )
    assert table_rows() == before
    call_command("load_world", newer, "--as", "room-2", stdout=out)
    call_command("load_world", newer, "--as", "room", "--replace", stdout=out)
    assert out.getvalue().splitlines() == [
        f"{older}: world talking-room (v2): new save 'room', 26 rows (objects 4, attributes 16, "
        "attribute acl 2, buffer entries 4)",
        f"{newer}: world talking-room (v1): new save 'room-2', 27 rows (objects 4, "
        "attributes 17, attribute acl 4, buffer entries 2)",
        f"{newer}: world talking-room (v1): replaced save 'room', 27 rows (objects 4, "
        "attributes 17, attribute acl 4, buffer entries 2); kept from the old save: nothing",
    ]
    live = Save.objects.live()
    assert sorted(live.values_list("name", "source_name")) == [
        ("room", "omnia-scenario-talking-room-fadea41.json"),
        ("room-2", "omnia-scenario-talking-room-fadea41.json"),
    ]
    assert Save.objects.filter(retired_at__isnull=False).count() == 1


@pytest.mark.django_db
def test_replace_keeps_alias_edits_and_accepted_findings_where_the_ids_still_exist(
    fixtures_dir,
) -> None:
    from memory.active_save import use
    from memory.models import AliasChange, LeakAcceptance, WorldObject

    v1, v2 = fixtures_dir / "omnia-74ffb45-tavern.sqlite", fixtures_dir / "omnia-head-tavern.sqlite"
    call_command("import_omnia", str(v1), "--as", "tavern", stdout=StringIO())
    old = Save.objects.get(name="tavern")
    with use(old):
        AliasChange.objects.create(viewer_id="alice", target_id="bob", before="x", after="Gareth")
        AliasChange.objects.create(viewer_id="ghost", target_id="bob", before=None, after="Boo")
        LeakAcceptance.objects.create(
            viewer_id="alice", section="buffer", kind="system_id", text="bob", reason="test"
        )
        # Made a while ago: what is carried over keeps its time.
        then = datetime(2026, 11, 2, 9, 30, tzinfo=UTC)
        AliasChange.objects.update(changed_at=then)
        LeakAcceptance.objects.update(accepted_at=then)
    out = StringIO()
    call_command("import_omnia", str(v2), "--as", "tavern", "--replace", stdout=out)
    assert (
        out.getvalue()
        .splitlines()[0]
        .endswith(
            "; kept from the old save: 1 alias edits, 1 accepted leak findings; dropped (ids not "
            "in the new file): 1 alias edits"
        )
    )
    new = Save.objects.live().get(name="tavern")
    assert new.pk != old.pk and new.source_name == "omnia-head-tavern.sqlite"
    with use(new):
        aliases = dict(json.loads(WorldObject.objects.get(id="alice").aliases_json))
        assert aliases["bob"] == "Gareth"
        assert list(AliasChange.objects.values_list("viewer_id", "after", "changed_at")) == [
            ("alice", "Gareth", then)
        ]
        assert LeakAcceptance.objects.values_list("text", "accepted_at").get() == ("bob", then)


@pytest.mark.django_db
def test_load_demo_if_empty_says_nothing_changed() -> None:
    call_command("load_demo", stdout=StringIO())
    out = StringIO()
    call_command("load_demo", "--if-empty", stdout=out)
    assert out.getvalue() == "nothing changed: saves are loaded already (demo)\n"


@pytest.mark.django_db
def test_delete_save_removes_every_row_of_that_save_and_no_other(fixtures_dir) -> None:
    from django.apps import apps

    call_command("import_omnia", str(fixtures_dir / "omnia-head-tavern.sqlite"), "--fold",
                 stdout=StringIO())  # fmt: skip
    call_command("load_demo", stdout=StringIO())
    call_command("run_projections", stdout=StringIO())
    demo = Save.objects.get(name="demo")

    def rows_of(save_id: int) -> dict[str, int]:
        counts = {}
        for model in apps.get_app_config("memory").get_models():
            if any(f.name == "game_save" for f in model._meta.local_fields):
                n = model.every_save.filter(game_save_id=save_id).count()
                counts[model._meta.db_table] = n
        return counts

    kept = rows_of(demo.pk)
    tavern = Save.objects.get(name="omnia-head-tavern")
    assert sum(rows_of(tavern.pk).values()) > 0
    with pytest.raises(CommandError) as refused:
        call_command("delete_save", "omnia-head-tavern", stdout=StringIO())
    assert str(refused.value) == (
        "refusing to delete save 'omnia-head-tavern' without --yes (stdin is no terminal)"
    )
    out = StringIO()
    call_command("delete_save", "omnia-head-tavern", "--yes", stdout=out)
    assert out.getvalue().startswith("deleted save 'omnia-head-tavern': ")
    assert set(rows_of(tavern.pk).values()) == {0}
    assert rows_of(demo.pk) == kept
    assert list(Save.objects.values_list("name", flat=True)) == ["demo"]
    with pytest.raises(CommandError) as unknown:
        call_command("delete_save", "nope", "--yes")
    assert (unknown.value.returncode, str(unknown.value)) == (
        2,
        "no save named 'nope'; saves here: demo",
    )


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("args", "said", "staff", "superuser", "can"),
    [
        ((), "created login designer (admin)", True, False, (True, True, True)),
        (("--role", "admin"), "created login designer (admin)", True, False, (True, True, True)),
        (
            ("--role", "editor"),
            "created login designer (editor)",
            False,
            False,
            (True, True, False),
        ),
        (
            ("--role", "reader"),
            "created login designer (reader)",
            False,
            False,
            (True, False, False),
        ),
        (("--superuser",), "created login designer (superuser)", True, True, (True, True, True)),
    ],
)
def test_ensure_login_makes_each_role(args, said, staff, superuser, can) -> None:
    out = StringIO()
    call_command("ensure_login", "--password", "omnia-demo", *args, stdout=out)
    assert out.getvalue() == f"{said}\n"
    user = get_user_model().objects.get(username="designer")
    assert (user.is_staff, user.is_superuser) == (staff, superuser)
    assert user.check_password("omnia-demo")
    perms = (READ_PERMISSION, EDIT_PERMISSION, ADMIN_PERMISSION)
    assert tuple(user.has_perm(p) for p in perms) == can


@pytest.mark.django_db
def test_ensure_login_again_with_another_role_replaces_the_role() -> None:
    call_command("ensure_login", "--username", "qa", "--password", "x-omnia-1", stdout=StringIO())
    out = StringIO()
    call_command(
        "ensure_login",
        "--username",
        "qa",
        "--password",
        "x-omnia-2",
        "--role",
        "editor",
        stdout=out,
    )
    assert out.getvalue() == "updated login qa (editor)\n"
    user = get_user_model().objects.get(username="qa")
    assert (user.is_staff, list(user.groups.values_list("name", flat=True))) == (False, ["editors"])
    assert user.check_password("x-omnia-2") and not user.check_password("x-omnia-1")
    call_command(
        "ensure_login",
        "--username",
        "qa",
        "--password",
        "x-omnia-2",
        "--role",
        "reader",
        stdout=StringIO(),
    )
    user = get_user_model().objects.get(username="qa")
    assert (user.is_staff, list(user.groups.values_list("name", flat=True))) == (False, [])
