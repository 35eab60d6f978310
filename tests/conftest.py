"""The named cast every test can lean on, built with plain ORM calls or the project's loaders.

One meaning per name, everywhere in tests/ (a module never redefines one of these):

The worlds. `cast`: the tavern — alice (knows bob as "the hooded figure", charlie as "the
bartender"), bob (true name Gareth, PRIVATE; knows alice as "the traveller"), charlie the
bartender (knows bob as "Gareth"). `chest`: alice's memory of bob opening the wooden chest.
`demo`: the demo world, loaded and folded. `millbrook`: the river town with readable ids.
`lighthouse`: readable ids that are ordinary words (keeper, castaway, miller), labelled.
`two_eras`: the tavern's v1 and v2 omnia files, one save each, folded. `save`: an empty save.

The save a test reads and writes in is active only when it says so, as production's edges
do (a page's URL, a command's --save): each fixture that makes one world (`save`, `cast`,
`demo`, `millbrook`) activates its save for the rest of the test; `two_eras` activates none.
A test that makes its own save names it with `activate_save(name)` (or `with use(save):`).
Outside them a save-scoped query raises, so a test cannot pass by reading "the only save".

The people, one account per role (memory/roles.py), password "pw": `reader` (rita, the
readers group), `editor` (eddie, the editors group), `admin` (ada, the admins group), `staff`
(a staff account: an admin by its flag), `root` (a superuser), `designer` (the demo login as
`make run` makes it). Each `<person>_client` is Django's test client signed in as them.
"""

from __future__ import annotations

import fcntl
import json
import shutil
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.helpers import (
    CHEST,
    DESIGNER_PASSWORD,
    FIXTURES,
    LIGHTHOUSE,
    MILLBROOK,
    TAVERN_V1,
    TAVERN_V2,
)

# --- what the PostgreSQL leg of CI leaves out ---------------------------------------------------

# Tests whose outcome cannot depend on the database backend carry one of these marks (pyproject
# lists them): tests/browser/ by directory, the rest by module (`pytestmark`) or, in a module
# that mixes, by test. CI runs them on SQLite only; everything unmarked runs on both.
ONCE = ("browser", "readme", "terminal", "pure", "no_test_db")
_TEST_DATABASE_FIXTURES = {"db", "transactional_db", "live_server", "django_db_setup"}
_BROWSER = Path(__file__).parent / "browser"


def _uses_test_database(item: pytest.Item) -> bool:
    fixtures = set(getattr(item, "fixturenames", ()))
    return item.get_closest_marker("django_db") is not None or bool(
        fixtures & _TEST_DATABASE_FIXTURES
    )


@pytest.hookimpl(tryfirst=True)  # before -m deselects by mark
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if _BROWSER in item.path.parents:
            item.add_marker(pytest.mark.browser)
        if not _uses_test_database(item):
            # Asks for no database of the run's backend (pure code, or manage.py children on
            # SQLite files of their own): on PostgreSQL it would run the very same thing again.
            item.add_marker(pytest.mark.no_test_db)
        # readme, terminal and pure say "no database of the run's backend": a test so marked
        # that reads the test database would silently skip PostgreSQL in CI. Refuse it.
        once = [m for m in ONCE[1:] if item.get_closest_marker(m)]
        if once and _uses_test_database(item):
            raise pytest.UsageError(
                f"{item.nodeid} is marked {once[0]} but uses the test database: such a test "
                "runs on both backends, so it takes no once-only mark"
            )


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item):
    """Each test that reads the test database plans its statements with the statistics the
    database holds when it starts. SQLite keeps the statistics it last read in the connection:
    a test's import takes some (inside the transaction the test is rolled back to) and, once
    the statistics table exists, the rollback leaves them loaded for the next test on the
    worker, whose plans (and plan tests) then follow another test's data."""
    if _uses_test_database(item):
        from django.db import connection

        if connection.vendor == "sqlite":
            with connection.cursor() as cursor:
                # No table, no statistics held: the rollback that dropped it reset them too.
                cursor.execute("SELECT 1 FROM sqlite_master WHERE name = 'sqlite_stat1'")
                if cursor.fetchone():
                    cursor.execute("ANALYZE sqlite_schema")  # sqlite.org/lang_analyze.html
    return (yield)


@dataclass
class Cast:
    world: object
    alice: object
    bob: object
    charlie: object


@pytest.fixture
def activate_save(db):
    """activate_save(save or name): that save is active for the rest of the test (and the
    Save returned), for a test that makes its own."""
    from memory.active_save import activate, deactivate
    from memory.engine.saves import get_save

    tokens = []

    def activate_for_test(save):
        save = get_save(save) if isinstance(save, str) else save
        tokens.append(activate(save))
        return save

    yield activate_for_test
    for token in reversed(tokens):
        deactivate(token)


@pytest.fixture
def save(db, activate_save):
    """An empty save named "test", active, for a test that builds its rows by hand."""
    from memory.models import Save

    return activate_save(Save.objects.create(name="test", kind="scenario", era="v2"))


# --- the test database: migrated once per run --------------------------------------------------


@pytest.fixture(scope="session")
def django_db_setup(
    request: pytest.FixtureRequest,
    django_test_environment: None,
    django_db_blocker,
    django_db_keepdb: bool,
    django_db_createdb: bool,
    tmp_path_factory,
):
    """pytest-django's test database, migrated once per run. Under xdist the first worker
    migrates a template and every worker tests in a copy of it (PostgreSQL: CREATE DATABASE
    … TEMPLATE; SQLite: the file copied), instead of each migrating its own. In one process,
    or with --reuse-db, Django's own set-up."""
    from django.db import connection
    from django.test.utils import setup_databases, teardown_databases

    worker = getattr(request.config, "workerinput", None)
    keepdb = django_db_keepdb and not django_db_createdb
    verbosity = request.config.option.verbose
    if worker is None or keepdb:
        with django_db_blocker.unblock():
            databases = setup_databases(verbosity=verbosity, interactive=False, keepdb=keepdb)
        yield
        if not keepdb:
            with django_db_blocker.unblock():
                teardown_databases(databases, verbosity=verbosity)
        return

    creation = connection.creation
    template = creation._get_test_db_name()
    run = tmp_path_factory.getbasetemp().parent  # shared by this run's workers
    with django_db_blocker.unblock(), (run / "test-database.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        migrated = run / "test-database.migrated"
        if not migrated.exists():
            creation.create_test_db(verbosity=verbosity, autoclobber=True, serialize=False)
            migrated.touch()
        _use_database(connection, template)  # closed: a template may have no connection
        clone = creation.get_test_db_clone_settings(worker["workerid"])["NAME"]
        if connection.vendor == "sqlite":
            # A run cut short leaves its clone's WAL beside it: a new copy of the template
            # with that old WAL replayed over it reads as a corrupt schema.
            for leftover in (f"{clone}-wal", f"{clone}-shm"):
                Path(leftover).unlink(missing_ok=True)
        creation.clone_test_db(suffix=worker["workerid"], verbosity=verbosity, autoclobber=True)
        _use_database(connection, clone)
    yield
    with django_db_blocker.unblock(), (run / "test-database.lock").open("w") as lock:
        connection.close()
        creation._destroy_test_db(clone, verbosity)
        fcntl.flock(lock, fcntl.LOCK_EX)
        done = run / "test-database.done"
        finished = int(done.read_text()) + 1 if done.exists() else 1
        done.write_text(str(finished))
        if finished == worker["workercount"]:  # the last worker out drops the template
            creation._destroy_test_db(template, verbosity)


def _use_database(connection, name: str) -> None:
    from django.conf import settings

    connection.close()
    connection.settings_dict["NAME"] = name
    settings.DATABASES[connection.alias]["NAME"] = name


@pytest.fixture(scope="session")
def migrated_sqlite(request: pytest.FixtureRequest, tmp_path_factory) -> Path:
    """A SQLite file that `manage.py migrate` took to head, once per run (the xdist workers of
    a run share it): a test that runs manage.py children on a database of its own copies it
    (`fresh_sqlite`) instead of migrating again."""
    from tests.cli import isolated_env, manage

    base = tmp_path_factory.getbasetemp()
    run = base.parent if hasattr(request.config, "workerinput") else base
    template = run / "migrated.sqlite3"
    with (run / "migrated.sqlite3.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # the first worker migrates; the others wait for it
        if not template.exists():
            migrating = run / "migrating.sqlite3"
            manage("migrate", "-v0", env=isolated_env(migrating))
            with sqlite3.connect(migrating) as conn:  # all of it in the file, none in a WAL
                conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            migrating.rename(template)
    return template


@pytest.fixture
def fresh_sqlite(migrated_sqlite: Path, tmp_path: Path) -> Callable[[str], Path]:
    """fresh_sqlite(name): tmp_path/<name>.sqlite3, an inspector database at the head of the
    migrations, for a manage.py child (`tests.cli.isolated_env`)."""

    def make(name: str) -> Path:
        db = tmp_path / f"{name}.sqlite3"
        shutil.copy(migrated_sqlite, db)
        return db

    return make


@pytest.fixture
def fixtures_dir() -> Path:
    return FIXTURES


@pytest.fixture
def demo(db, activate_save) -> None:
    """The demo world (harbor-town: npc-pip, npc-tobiah, npc-sable …) loaded and folded; its
    save, "demo", active."""
    from memory.engine.projections import run_cycle
    from memory.worlds.demo import load_demo

    load_demo()
    activate_save("demo")
    run_cycle()


@pytest.fixture
def cast(db, activate_save) -> Cast:
    """The tavern, in its own save "cast", active."""
    from memory.models import Attribute, AttributeAcl, Save, WorldObject

    activate_save(Save.objects.create(name="cast", kind="scenario", era="v2"))
    world = WorldObject.objects.create(
        id="tavern", type="world", clock_iso="2026-07-06T12:30:00.000Z"
    )
    Attribute.objects.create(
        object_id=world.id, name="name", value="The Rusty Flagon", visibility="PUBLIC"
    )

    def entity(id_: str, location: str, aliases: dict[str, str], attrs: list[tuple[str, str, str]]):
        obj = WorldObject.objects.create(
            id=id_,
            type="entity",
            world_id=world.id,
            location_id=location,
            aliases_json=json.dumps(list(aliases.items()), separators=(",", ":")),
            is_agent=1,
        )
        for name, value, visibility in attrs:
            Attribute.objects.create(
                object_id=obj.id, name=name, value=value, visibility=visibility
            )
        return obj

    alice = entity(
        "alice",
        "tavern-main",
        {"bob": "the hooded figure", "charlie": "the bartender"},
        [
            ("name", "Alice", "PUBLIC"),
            ("appearance", "a young woman in a dusty green travelling cloak", "PUBLIC"),
            ("purpose", "searching for her missing brother", "PRIVATE"),
        ],
    )
    bob = entity(
        "bob",
        "tavern-main",
        {"alice": "the traveller"},
        [
            ("name", "Gareth", "PRIVATE"),
            ("appearance", "a tall man hidden under a dark hooded cloak", "PUBLIC"),
            ("weapon", "a dagger strapped to his ankle", "PRIVATE"),
        ],
    )
    charlie = entity(
        "charlie",
        "tavern-main",
        {"bob": "Gareth"},
        [
            ("name", "Charlie", "PUBLIC"),
            ("occupation", "bartender", "PUBLIC"),
            ("debt", "owes 40 silver to the thieves' guild", "PRIVATE"),
        ],
    )
    AttributeAcl.objects.create(object_id=bob.id, attribute_name="name", entity_id="charlie")
    AttributeAcl.objects.create(object_id=bob.id, attribute_name="weapon", entity_id="charlie")
    return Cast(world=world, alice=alice, bob=bob, charlie=charlie)


@pytest.fixture
def chest(cast):
    """alice saw bob (to her "the hooded figure") open the wooden chest, at 12:03."""
    from memory.engine.write_door import remember

    return remember(
        "alice",
        CHEST,
        timestamp="2026-07-06T12:03:00.000Z",
        outcome={"isValid": True, "reason": "it was unlocked"},
    ).entry


@pytest.fixture
def millbrook(db, tmp_path, activate_save):
    """A river town with readable ids: hale ("Hale Morrow", PRIVATE), ned, ida, the-tannery;
    its save, "millbrook", active."""
    from memory.worlds.scenario import load_world

    path = tmp_path / "millbrook.json"
    path.write_text(json.dumps(MILLBROOK))
    activate_save(load_world(path).save)


@pytest.fixture
def lighthouse(db, activate_save):
    """The lighthouse, readable ids that are ordinary words (keeper, castaway, miller; ada
    writes them as descriptions, bo as names: LIGHTHOUSE_LABELLED); its save, "lighthouse",
    active and its findings stored."""
    from memory.engine.leaks.stored import refresh
    from memory.worlds.scenario import load_world

    activate_save(load_world(LIGHTHOUSE, as_name="lighthouse").save)
    refresh()


@pytest.fixture
def two_eras(db) -> None:
    """The tavern's omnia file at 74ffb45 (v1) and at head (v2): two saves named after the
    files, each folded."""
    from memory.active_save import use
    from memory.engine.projections import run_cycle
    from memory.engine.saves import get_save
    from memory.worlds.omnia_import import import_omnia

    for name in (TAVERN_V1, TAVERN_V2):
        import_omnia(FIXTURES / f"{name}.sqlite")
    for name in (TAVERN_V1, TAVERN_V2):
        with use(get_save(name)):
            run_cycle()


# --- the people ----------------------------------------------------------------------------------


def _account(django_user_model, username: str, *groups: str, **flags):
    import importlib

    from django.apps import apps
    from django.contrib.auth.models import Group

    if groups and Group.objects.filter(name__in=groups).count() < len(set(groups)):
        # A transactional test before this one on the worker flushed the tables, the role
        # groups migration 0004 made included: make them again, as that migration does.
        importlib.import_module("memory.migrations.0004_roles").create_groups(apps, None)
    user = django_user_model.objects.create_user(username, password="pw", **flags)
    for group in groups:
        user.groups.add(Group.objects.get(name=group))
    return user


@pytest.fixture
def reader(django_user_model):
    """rita, a reader: every page and read API, no writes."""
    from memory.roles import READERS

    return _account(django_user_model, "rita", READERS)


@pytest.fixture
def editor(django_user_model):
    """eddie, an editor: reads, and edits aliases and memories, runs cycles."""
    from memory.roles import EDITORS

    return _account(django_user_model, "eddie", EDITORS)


@pytest.fixture
def admin(django_user_model):
    """ada, an admin by the admins group: edits and rebuilds."""
    from memory.roles import ADMINS

    return _account(django_user_model, "ada", ADMINS)


@pytest.fixture
def staff(django_user_model):
    """A staff account in no group: an admin by its flag (the older "staff may write" rule)."""
    return _account(django_user_model, "staff", is_staff=True)


@pytest.fixture
def root(django_user_model):
    """A superuser: every permission, users and groups too."""
    return django_user_model.objects.create_superuser("root", "root@example.com", "pw")


@pytest.fixture
def designer(db, django_user_model):
    """The demo login exactly as `make run` makes it: designer / omnia-demo, a staff account
    (the admin role), no superuser."""
    from io import StringIO

    from django.core.management import call_command

    call_command("ensure_login", username="designer", password=DESIGNER_PASSWORD, stdout=StringIO())
    user = django_user_model.objects.get(username="designer")
    assert (user.is_staff, user.is_superuser) == (True, False)
    return user


def _signed_in(client, user):
    client.force_login(user)
    return client


@pytest.fixture
def reader_client(client, reader):
    return _signed_in(client, reader)


@pytest.fixture
def editor_client(client, editor):
    return _signed_in(client, editor)


@pytest.fixture
def staff_client(client, staff):
    return _signed_in(client, staff)


@pytest.fixture
def root_client(client, root):
    return _signed_in(client, root)


@pytest.fixture
def designer_client(client, designer):
    return _signed_in(client, designer)
