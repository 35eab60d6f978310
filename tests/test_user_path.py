"""The user's path (issue 25): a generated omnia save brought in with `import_omnia` as a user
does, then every page a user opens. Two laws:

* the bulk doors leave the planner current (statistics taken, no ANALYZE by hand);
* every hot statement is written so that its index is the only sensible plan, even with no
  statistics at all: checked on the statements each page really runs, with the statistics
  deleted (SQLite: `EXPLAIN QUERY PLAN`; PostgreSQL: `EXPLAIN` with sequential scans priced
  out, so a Seq Scan appears only where no index can serve the statement).

The filtered buffer keeps its answer exact under a scan budget: it stops, says how far back it
searched, and its link onward finds the rest.
"""

from __future__ import annotations

import re

import pytest
from django.core.management import call_command
from django.db import connection
from django.test import override_settings
from django.test.utils import CaptureQueriesContext

from memory.worlds.synthetic import Shape, generate_omnia_world

SHAPE = Shape.named("uuid-head", rows=3000, entities=40, hot_rows=900, leaks=0.2)
# Why the sampled-statistics tests are SQLite's alone: its analysis_limit reads the first
# entries of each index; PostgreSQL's ANALYZE samples rows at random and has no such setting.
ONLY_SQLITE_SAMPLES_FIRST_ENTRIES = (
    "the fault is SQLite's: its analysis_limit samples an index's first entries; PostgreSQL's "
    "ANALYZE samples rows at random and has no such limit, so nothing is missing there"
)
# The tables a page reads that grow with the world: a scan of one grows with it.
BIG_TABLES = ("buffer_entries", "memory_sessions", "memory_episodes", "memory_leak_findings")


@pytest.fixture
def world(db, tmp_path):
    """A 3,000-row uuid-id save of omnia head's era, imported and folded as `make run` users
    do (`import_omnia --fold`); returns the generator's facts and the save's name."""
    from memory.active_save import use
    from memory.models import Save

    info = generate_omnia_world(tmp_path / "harbour.sqlite", SHAPE)
    call_command("import_omnia", str(tmp_path / "harbour.sqlite"), "--fold", verbosity=0)
    save = Save.objects.get(name="harbour")
    with use(save):
        yield {**info, "save": save.name, "save_pk": save.pk}


@pytest.fixture
def admin_client(client, django_user_model):
    client.force_login(django_user_model.objects.create_superuser("qa", password="pw"))
    return client


def _forget_statistics() -> None:
    """The store as an import without the statistics step would leave it."""
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute("SELECT 1 FROM sqlite_master WHERE name = 'sqlite_stat1'")
            if cursor.fetchone():
                cursor.execute("DELETE FROM sqlite_stat1")
            cursor.execute("ANALYZE sqlite_schema")  # the planner rereads: none now
        else:
            # PostgreSQL keeps no per-table switch; pricing sequential scans out below makes
            # the check independent of whatever statistics it has.
            cursor.execute("SET enable_seqscan = off")


def _plan(sql: str) -> list[str]:
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute("EXPLAIN QUERY PLAN " + sql)
            return [str(row[-1]) for row in cursor.fetchall()]
        cursor.execute("EXPLAIN " + sql)
        return [row[0] for row in cursor.fetchall()]


def _bad_steps(plan: list[str]) -> list[str]:
    """The steps of a plan that read a big table whole, or reach a viewer's rows through the
    save's id index (every row of the save read, then sorted)."""
    bad = []
    for step in plan:
        for table in BIG_TABLES:
            if connection.vendor == "sqlite":
                if re.search(rf"\bSCAN {table}\b(?! USING (COVERING )?INDEX idx_)", step):
                    bad.append(step)
                if f"SEARCH {table} " in step and "(game_save_id=? AND id>?)" in step:
                    bad.append(step)
            elif re.search(rf"Seq Scan on {table}\b", step):
                bad.append(step)
    return bad


def _hot_statements(queries: list[dict]) -> list[str]:
    return [
        q["sql"]
        for q in queries
        if q["sql"].lstrip().upper().startswith("SELECT")
        and any(re.search(rf'\b"?{t}"?\b', q["sql"]) for t in BIG_TABLES)
    ]


def _pages(world: dict) -> dict[str, str]:
    save, viewer, person = world["save"], world["viewer"], world["person"]
    pk = world.get("save_pk", 0)
    p, a = f"/saves/{save}", f"/api/saves/{save}"
    return {
        "viewer page": f"{p}/viewers/{viewer}/",
        "buffer fragment": f"{p}/viewers/{viewer}/buffer/",
        "buffer api": f"{a}/viewers/{viewer}/buffer",
        "buffer filtered by text": f"{p}/viewers/{viewer}/buffer/?q={world['word']}",
        "buffer filtered by person": f"{p}/viewers/{viewer}/buffer/?uses={person}",
        "buffer by type": f"{a}/viewers/{viewer}/buffer?type=dialogue",
        "sessions": f"{p}/viewers/{viewer}/sessions/",
        "sessions api": f"{a}/viewers/{viewer}/sessions",
        "aliases": f"{p}/viewers/{viewer}/aliases/",
        "faces": f"{p}/viewers/{viewer}/faces/",
        "prompt": f"{p}/viewers/{viewer}/prompt/",
        "prompt at a moment": f"{p}/viewers/{viewer}/prompt/?at=2026-07-06T12:00:00.000Z",
        "prompt api at a moment": f"{a}/viewers/{viewer}/prompt?at=2099-01-01T00:00:00Z",
        "pair": f"{p}/viewers/{viewer}/remembers/{person}/",
        "pair api": f"{a}/viewers/{viewer}/remembers/{person}",
        "entities api": f"{a}/entities",
        "leak report": f"{p}/leaks/",
        "leaks api": f"{a}/leaks",
        "save page": f"{p}/",
        "overview": "/",
        "triage queue": "/triage/",
        "triage api": "/api/triage",
        "admin buffer list": "/admin/memory/bufferentry/",
        "admin buffer list of a save": f"/admin/memory/bufferentry/?game_save__id__exact={pk}",
        "admin buffer list of a viewer": f"/admin/memory/bufferentry/?owner_id__exact={viewer}",
    }


def test_import_leaves_the_planner_statistics_current(world):
    """No one runs ANALYZE after an import: the import does."""
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute("SELECT tbl FROM sqlite_stat1 WHERE tbl = 'buffer_entries' LIMIT 1")
            assert cursor.fetchall() == [("buffer_entries",)]
        else:
            cursor.execute(
                "SELECT relname FROM pg_stat_user_tables WHERE relname = 'buffer_entries' "
                "AND coalesce(last_analyze, last_autoanalyze) IS NOT NULL"
            )
            assert cursor.fetchall() == [("buffer_entries",)]


@pytest.mark.skipif(
    connection.vendor != "sqlite",
    reason=ONLY_SQLITE_SAMPLES_FIRST_ENTRIES,
)
def test_the_statistics_count_every_row_of_a_save(world):
    """The statistics say how many rows a save holds: a sampled ANALYZE (analysis_limit)
    records its sample's size instead (2,001 of a 1M-row save with a limit of 2,000; here,
    2,001 of 3,003), and the planner then takes reading the whole save for cheap."""
    from memory.models import BufferEntry

    rows = BufferEntry.objects.count()
    with connection.cursor() as cursor:
        cursor.execute("SELECT stat FROM sqlite_stat1 WHERE idx = 'idx_buffer_fold'")
        (stat,) = cursor.fetchone()
    assert rows > 2_001
    assert stat.split()[:2] == [str(rows), str(rows)]  # rows in all, rows of the one save


def _sampled_statistics() -> None:
    """The statistics a sampled ANALYZE leaves on a save much bigger than its sample (SQLite
    reads the first entries of each index): they say a save holds the sample's few rows."""
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA analysis_limit = 100")
        cursor.execute("ANALYZE")
        cursor.execute("PRAGMA analysis_limit = 0")


@pytest.mark.skipif(
    connection.vendor != "sqlite",
    reason=ONLY_SQLITE_SAMPLES_FIRST_ENTRIES,
)
@pytest.mark.parametrize("query", ["q", "uses", "type"])
def test_the_filtered_buffer_reads_its_rows_by_key_whatever_the_statistics(
    world, admin_client, query
):
    """The rows the text index names are read by their keys, even where the statistics say a
    save's whole index is a short read (as a sampled ANALYZE of a big save says): a search
    read every row of the save's owner index to find a thousand (40-110 ms at 1M rows)."""
    save, viewer = world["save"], world["viewer"]
    asked = {"q": world["word"], "uses": world["person"], "type": "dialogue"}[query]
    _sampled_statistics()
    with CaptureQueriesContext(connection) as captured:
        response = admin_client.get(f"/api/saves/{save}/viewers/{viewer}/buffer?{query}={asked}")
    assert response.status_code == 200
    by_key = [q["sql"] for q in captured.captured_queries if " uid IN (" in q["sql"]]
    assert by_key, "the index named the rows"
    for sql in by_key:
        assert _plan(sql) == ["SEARCH buffer_entries USING INTEGER PRIMARY KEY (rowid=?)"], sql


def test_the_descriptor_words_are_sought_among_the_ids_by_index(world, admin_client):
    """The aliases panel's check of which ids a descriptor word equals reads the lowered ids'
    index and the partial index of ids that are not ASCII (SQLite), never every id of the
    save lowered one by one."""
    save, viewer = world["save"], world["viewer"]
    _forget_statistics()
    with CaptureQueriesContext(connection) as captured:
        response = admin_client.get(f"/saves/{save}/viewers/{viewer}/aliases/")
    assert response.status_code == 200
    # (An IN list on SQLite, an array on PostgreSQL: active_save.among.)
    (sql,) = [
        q["sql"]
        for q in captured.captured_queries
        if re.search(r"LOWER\(id\) (IN \(|= ANY\()", q["sql"])
    ]
    plan = _plan(sql)
    if connection.vendor == "sqlite":
        reads = [step for step in plan if step.startswith(("SEARCH objects", "SCAN objects"))]
        assert reads == [
            "SEARCH objects USING COVERING INDEX idx_objects_lower_id "
            "(<expr>=? AND game_save_id=?)",
            "SEARCH objects USING COVERING INDEX idx_objects_not_ascii (game_save_id=?)",
        ], plan
    else:
        # A save of 61 objects is as cheap read by its save's index: PostgreSQL takes either,
        # and the lowered ids' index at 2,000 entities (0.84 -> 0.39 ms); never a scan. The
        # ids that are not ASCII are its partial index (migration 0030), not every id measured.
        assert not [step for step in plan if "Seq Scan" in step], plan
        assert any("idx_objects_not_ascii" in step for step in plan), plan


def test_one_viewers_findings_are_sought_by_viewer(world, admin_client):
    """A prompt's stored findings are read by their viewer, not found among every finding of
    the save (the viewer was named only inside the EXISTS that checks it is an entity)."""
    save, viewer = world["save"], world["viewer"]
    _forget_statistics()
    with CaptureQueriesContext(connection) as captured:
        response = admin_client.get(f"/saves/{save}/viewers/{viewer}/prompt/")
    assert response.status_code == 200
    reads = [
        q["sql"]
        for q in captured.captured_queries
        if re.search(r'FROM "memory_leak_findings"', q["sql"]) and "ordinal" in q["sql"]
    ]
    assert reads
    if connection.vendor == "postgresql":
        # A test's few findings fit a page, where the save's index and the viewer's cost the
        # same and PostgreSQL took either, by whatever statistics earlier tests of this
        # database left (it followed the order the tests ran in). Priced out of sorting, it
        # takes the index that gives the viewer's findings in order, and that index is
        # searched by the viewer only if the statement names it on the findings.
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL enable_sort = off")
    for sql in reads:
        plan = _plan(sql)
        if connection.vendor == "sqlite":
            (step,) = [s for s in plan if " memory_leak_findings " in f"{s} "]
            assert step.endswith("(game_save_id=? AND viewer_id=?)"), plan
        else:
            (scan,) = [i for i, s in enumerate(plan) if " on memory_leak_findings" in s]
            assert re.search(r"Index Cond: .*viewer_id = ", plan[scan + 1]), plan


@pytest.mark.postgres_only
@pytest.mark.skipif(
    connection.vendor != "postgresql",
    reason="PostgreSQL's visibility map: SQLite keeps none, and VACUUM is PostgreSQL's step",
)
@pytest.mark.django_db(transaction=True)
def test_import_leaves_postgresql_pages_all_visible(tmp_path):
    """Outside a transaction (as the command runs) the import VACUUMs what it loaded: an
    index-only scan of the save's rows reads no heap (the rebuild's owner split, a count)."""
    generate_omnia_world(tmp_path / "harbour.sqlite", SHAPE)
    with connection.cursor() as cursor:
        cursor.execute("SELECT relallvisible FROM pg_class WHERE relname = 'buffer_entries'")
        assert cursor.fetchone() == (0,)
    call_command("import_omnia", str(tmp_path / "harbour.sqlite"), verbosity=0)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.relallvisible = c.relpages, s.last_vacuum IS NOT NULL "
            "FROM pg_class c JOIN pg_stat_user_tables s ON s.relid = c.oid "
            "WHERE c.relname = 'buffer_entries'"
        )
        assert cursor.fetchone() == (True, True)


@pytest.mark.parametrize(
    "page", list(_pages({"save": "s", "viewer": "v", "person": "p", "word": "w"}))
)
def test_hot_statements_use_their_index_without_statistics(world, admin_client, page):
    url = _pages(world)[page]
    _forget_statistics()
    with CaptureQueriesContext(connection) as captured:
        response = admin_client.get(url)
    assert response.status_code == 200, url
    statements = _hot_statements(captured.captured_queries)
    if page.startswith(("viewer", "buffer")):
        assert statements, "the page reads the viewer's rows"
    bad = {sql[:200]: _bad_steps(_plan(sql)) for sql in statements}
    assert {sql: steps for sql, steps in bad.items() if steps} == {}


def test_buffer_pages_walked_with_cursors_use_their_index(world, admin_client):
    """Both directions and a cursor deep in the buffer: each page a seek, never a walk."""
    save, viewer = world["save"], world["viewer"]
    base = f"/api/saves/{save}/viewers/{viewer}/buffer?limit=50"
    _forget_statistics()
    first = admin_client.get(base).json()
    older = admin_client.get(f"{base}&before={first['older']}").json()
    with CaptureQueriesContext(connection) as captured:
        newer = admin_client.get(f"{base}&after={older['newer']}").json()
        admin_client.get(f"{base}&before={older['older']}")
    assert [i["id"] for i in newer["items"]] == [i["id"] for i in first["items"]]
    statements = _hot_statements(captured.captured_queries)
    assert statements
    assert {s[:200]: _bad_steps(_plan(s)) for s in statements if _bad_steps(_plan(s))} == {}


def test_which_viewers_are_behind_is_read_from_the_entities_index(world, admin_client):
    """The leak pages' count of viewers and which of them wait for a scan: the objects read
    on their (save, type, world, id, is_agent) index alone, never through their rows (an
    aliases_json of kilobytes each), the scan rows by their key; and the open findings counted
    per viewer from the scan rows (their counts by kind) and the acceptances (to the findings
    they accept, through the findings' own index)."""
    from memory.engine.leaks import standing
    from memory.models import LeakAcceptance, WorldObject

    viewer = WorldObject.objects.filter(type="entity").values_list("id", flat=True)[0]
    LeakAcceptance.objects.create(viewer_id=viewer, section="s", kind="system_id", text="t")
    _forget_statistics()
    with CaptureQueriesContext(connection) as captured:
        board = standing.read_board()
        assert board.standing.viewers == SHAPE.entities
        standing.open_counts(board=board)
    statements = [q["sql"] for q in captured.captured_queries]
    plans = [_plan(sql) for sql in statements]
    # the board (every entity beside its scan row: who is behind, the counts by kind, and
    # whether anything is accepted), the accepted findings
    assert len(plans) == 2
    for plan in plans:
        assert not [step for step in plan if re.search(r"\bSCAN o\b|Seq Scan on objects", step)]
        assert _bad_steps(plan) == []
    if connection.vendor == "sqlite":
        entities = "SEARCH o USING COVERING INDEX idx_objects_entities (game_save_id=? AND type=?)"
        assert [step for step in plans[0] if step.startswith("SEARCH o")] == [entities]
        assert any(
            step.startswith("SEARCH s USING INDEX sqlite_autoindex_memory_leak_scans_1")
            for step in plans[0]
        ), plans[0]
        assert any(step.startswith("SEARCH a USING ") for step in plans[0]), plans[0]


def test_the_worlds_are_found_by_the_objects_type_index(world):
    """The save page's and the leak report's worlds (a few objects among thousands): read on
    the (save, type) index, never by walking every object of the save in id order to spare a
    sort of the few (what SQLite chose for ORDER BY id)."""
    from memory.selectors.viewers import list_worlds

    _forget_statistics()
    with CaptureQueriesContext(connection) as captured:
        assert [w.id for w in list_worlds()] == ["harbour-world"]
    (plan,) = [_plan(q["sql"]) for q in captured.captured_queries]
    if connection.vendor == "sqlite":
        assert plan == [
            "SEARCH objects USING INDEX idx_objects_entities (game_save_id=? AND type=?)"
        ]
    else:
        assert not [step for step in plan if "Seq Scan" in step], plan


def test_the_triage_word_facet_counts_in_text_order_from_its_index(world, admin_client):
    """The triage queue's words, counted over every finding of the save: read in text order
    off the (save, text) index, grouped as they come (no sort or hash of every finding)."""
    _forget_statistics()
    with CaptureQueriesContext(connection) as captured:
        assert admin_client.get("/triage/").status_code == 200
    every_word = [q["sql"] for q in captured.captured_queries if q["sql"].endswith("GROUP BY text")]
    assert len(every_word) == 1
    plan = _plan(every_word[0])
    if connection.vendor == "sqlite":
        index = "USING COVERING INDEX leak_findings_words (game_save_id=?)"
        assert plan == [f"SEARCH memory_leak_findings {index}"]
    else:
        # At a few dozen findings a sort costs nothing and PostgreSQL rightly takes one: with
        # hashing and sorting priced out, the words index is what gives the text order.
        with connection.cursor() as cursor:
            for switch in ("enable_hashagg", "enable_sort", "enable_bitmapscan"):
                cursor.execute(f"SET LOCAL {switch} = off")
            plan = _plan(every_word[0])
        assert "Index Only Scan using leak_findings_words" in " ".join(plan), plan
        assert not [step for step in plan if "Sort" in step], plan


@pytest.mark.parametrize(
    "lookup", ["", "?game_save__id__exact={pk}", "?owner_id__exact={viewer}", "?q={viewer}"]
)
def test_the_admin_buffer_list_reads_its_page_in_index_order(world, admin_client, lookup):
    """The admin's list of buffer rows (every save's, newest save first, each newest first):
    its page read in the order of an index, never every row sorted (1M rows: SQLite 942 ms
    -> 28 ms, PostgreSQL 400 -> 70 ms; the viewer's rows 347 -> 37 ms and 228 -> 50 ms; the
    search for the viewer's id 128 -> 38 ms and 290 -> 52 ms)."""
    url = "/admin/memory/bufferentry/" + lookup.format(pk=world["save_pk"], viewer=world["viewer"])
    with CaptureQueriesContext(connection) as captured:
        response = admin_client.get(url)
    assert response.status_code == 200
    assert not re.search(r"\b0 buffer entries", response.content.decode())
    [page] = [
        q["sql"]
        for q in captured.captured_queries
        if q["sql"].startswith('SELECT "buffer_entries"."uid"') and "LIMIT" in q["sql"]
    ]
    plan = _plan(page)
    if connection.vendor == "sqlite":
        assert not [step for step in plan if step == "USE TEMP B-TREE FOR ORDER BY"], plan
    else:
        # An Incremental Sort of rows the index gives in order is fine; a Sort of them all not.
        assert not [step for step in plan if re.match(r"\s*(->\s*)?Sort\s+\(", step)], plan


def _take_words_index_statistics() -> None:
    """Migration 0028's statistics step, on the test database's connection."""
    from importlib import import_module
    from types import SimpleNamespace

    migration = import_module("memory.migrations.0028_leak_findings_words")
    migration.take_statistics(None, SimpleNamespace(connection=connection))


def test_the_migration_adding_the_words_index_takes_its_statistics(world):
    """A store upgraded in place (statistics for the findings' other indexes, none for the new
    one) has them after the migration: without, SQLite read every finding through it."""
    from memory.models import LeakFinding

    findings = LeakFinding.objects.count()
    assert findings > 0
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute("ANALYZE memory_leak_findings")
            cursor.execute("DELETE FROM sqlite_stat1 WHERE idx = 'leak_findings_words'")
        else:
            cursor.execute(
                "DELETE FROM pg_statistic WHERE starelid = 'memory_leak_findings'::regclass"
            )
        _take_words_index_statistics()
        if connection.vendor == "sqlite":
            cursor.execute("SELECT stat FROM sqlite_stat1 WHERE idx = 'leak_findings_words'")
            assert int(cursor.fetchone()[0].split()[0]) == findings
        else:
            cursor.execute(
                "SELECT attname FROM pg_stats WHERE tablename = 'memory_leak_findings' "
                "AND attname IN ('game_save_id', 'text') ORDER BY attname"
            )
            assert cursor.fetchall() == [("game_save_id",), ("text",)]


def test_the_migration_leaves_a_store_without_findings_as_it_is(db):
    """A new store (no findings; on SQLite no statistics table either) is left as it is: its
    first import takes the statistics. (A statistics table made here would outlive every test's
    rollback, and with it whatever statistics a test's import loaded into the connection.)"""
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            # An earlier test on this worker may have made the table (it outlives rollbacks):
            # dropped inside this test's transaction, so the store is a new one until its end.
            cursor.execute("DROP TABLE IF EXISTS sqlite_stat1")
            cursor.execute("SELECT name FROM sqlite_master WHERE name LIKE 'sqlite_stat%'")
            assert cursor.fetchall() == []
        with CaptureQueriesContext(connection) as captured:
            _take_words_index_statistics()
        assert not [q for q in captured.captured_queries if "ANALYZE" in q["sql"]]
        if connection.vendor == "sqlite":
            cursor.execute("SELECT name FROM sqlite_master WHERE name LIKE 'sqlite_stat%'")
            assert cursor.fetchall() == []


def test_cursor_pages_seek_to_the_cursor_on_sqlite(world):
    """The keyset bound is a range on the owner's time index, not a walk from its end."""
    if connection.vendor != "sqlite":
        pytest.skip("the plan text checked here is SQLite's; PostgreSQL's is checked above")
    from memory.engine.knowledge import get_viewer
    from memory.selectors.buffer import buffer_page

    viewer = get_viewer(world["viewer"])
    first = buffer_page(viewer)
    _forget_statistics()
    with CaptureQueriesContext(connection) as captured:
        buffer_page(viewer, before=first.older)
    plan = _plan(captured.captured_queries[0]["sql"])
    assert plan == [
        "SEARCH buffer_entries USING INDEX idx_buffer_owner_time "
        "(game_save_id=? AND owner_id=? AND timestamp<?)"
    ]


def _every_match(viewer, **filters) -> list[str]:
    from memory.engine.buffer.rendered import render_entry
    from memory.engine.buffer.words import WordSearch, query_words, searched_text
    from memory.selectors.buffer import names_in, viewer_rows

    search = WordSearch(query_words(filters.get("q")))
    found = []
    for row in viewer_rows(viewer).order_by("-timestamp", "-created_at", "-id"):
        entry = render_entry(row, viewer)
        if "uses" in filters and filters["uses"] not in names_in(entry):
            continue
        if not search.matches(searched_text(entry.line, entry.intent_json, entry.outcome_json)):
            continue
        found.append(entry.id)
    return found


def test_the_leak_rescan_reads_each_viewer_by_its_index_without_statistics(world):
    """A rebuild's rescan reads the newest memories and sessions of a chunk of viewers in one
    statement each (issue 25 item 4): every viewer's part a seek of its own index."""
    from memory.engine.leaks.stored import refresh
    from memory.models import LeakScan

    LeakScan.objects.update(stale=True)
    _forget_statistics()
    with CaptureQueriesContext(connection) as captured:
        result = refresh()
    assert result.viewers_scanned == SHAPE.entities
    statements = _hot_statements(captured.captured_queries)
    # (a UNION ALL of one member per viewer; PostgreSQL's is one LATERAL member per key)
    batched = [s for s in statements if " UNION ALL " in s or " CROSS JOIN LATERAL " in s]
    assert sorted(re.search(r"FROM (\w+) WHERE", s).group(1) for s in batched) == [
        "buffer_entries",
        "memory_sessions",
    ]
    assert {s[:200]: _bad_steps(_plan(s)) for s in statements if _bad_steps(_plan(s))} == {}
    if connection.vendor != "sqlite":
        # PostgreSQL is held to what the issue asks of it (no Seq Scan, above): with no
        # statistics on memory_sessions it may take the save's index and sort each viewer's
        # few sessions (seen once in a full run), as the sessions page's statement of the
        # same shape may; statistics after a bulk write (planner.py) give it the owner index.
        return
    for statement in batched:
        # Each member bounded by its viewer: a seek, never the save's rows walked and sorted.
        plan = _plan(statement)
        seeks = [step for step in plan if re.search(r"\bSEARCH \w+ USING", step)]
        bounded = [step for step in seeks if "owner_id=?" in step]
        assert len(bounded) == len(seeks) == statement.count(" UNION ALL ") + 1, plan


@pytest.mark.parametrize("which", ["q", "uses"])
@pytest.mark.parametrize("indexed", [True, False], ids=["indexed", "read in order"])
def test_a_filter_stopped_by_its_budget_says_so_and_continues_to_every_match(
    world, which, indexed, monkeypatch
):
    """With no time at all: the text index hands a page only the rows that may match, so it
    never stops; where the index declines (forced here), each page reads one chunk, says how
    far back it searched, and the continue links together find exactly what one full scan
    finds, in order."""
    from memory.engine.knowledge import get_viewer
    from memory.selectors import buffer

    if not indexed:
        monkeypatch.setattr(buffer, "INDEXED_ROWS", 0)
    viewer = get_viewer(world["viewer"])
    filters = {"q": world["word"]} if which == "q" else {"uses": world["person"]}
    expected = _every_match(viewer, **filters)
    assert expected
    found, stops, cursor = [], 0, None
    with override_settings(OMNIA_BUFFER_SCAN_SECONDS=1e-9):
        while True:
            page = buffer.buffer_page(viewer, before=cursor, limit=40, **filters)
            found += [e.id for e in reversed(page.entries)]
            if page.searched_to:
                stops += 1
                assert page.older is not None
            cursor = page.older
            if cursor is None:
                break
    assert found == expected
    if indexed:
        assert stops == 0
    elif which == "q":
        assert stops >= 2  # 900 rows in 200-row chunks, no time to read a second


def test_the_filtered_buffer_reads_the_text_index_without_statistics(world, admin_client):
    """`?q=` and `?uses=` find their rows through the text index (FTS5 on SQLite, the GIN
    index on PostgreSQL), not by reading the viewer's rows: checked on the statements the
    page runs, with no statistics."""
    save, viewer = world["save"], world["viewer"]
    _forget_statistics()
    for query in (f"q={world['word']}", f"uses={world['person']}"):
        with CaptureQueriesContext(connection) as captured:
            response = admin_client.get(f"/saves/{save}/viewers/{viewer}/buffer/?{query}")
        assert response.status_code == 200
        plans = [_plan(q["sql"]) for q in captured.captured_queries]
        steps = [step for plan in plans for step in plan]
        if connection.vendor == "sqlite":
            assert "SCAN buffer_fts VIRTUAL TABLE INDEX 0:M1" in steps, query
            assert "SEARCH buffer_entries USING INTEGER PRIMARY KEY (rowid=?)" in steps, query
        else:
            assert any("Bitmap Index Scan on buffer_entries_words" in s for s in steps), query
        statements = _hot_statements(captured.captured_queries)
        assert {s[:200]: _bad_steps(_plan(s)) for s in statements if _bad_steps(_plan(s))} == {}


def test_growth_asks_for_statistics_each_time_the_table_doubles():
    from memory.engine.planner import GROWTH_MIN_ROWS, Growth

    growth = Growth(at_statistics=30_000)
    assert [growth.add(10_000) for _ in range(4)] == [False, False, True, False]
    assert (growth.at_statistics, growth.since) == (60_000, 10_000)
    small = Growth()
    assert small.add(GROWTH_MIN_ROWS - 1) is False
    assert small.add(1) is True


def test_load_world_leaves_the_planner_statistics_current(db):
    """The scenario door lands through the same save door as an import."""
    from tests.helpers import FIXTURES

    call_command("load_world", str(FIXTURES / "omnia-head-tavern.scenario.json"), verbosity=0)
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute("SELECT count(*) FROM sqlite_stat1 WHERE tbl = 'objects'")
            assert cursor.fetchone()[0] >= 1
        else:
            cursor.execute(
                "SELECT count(*) FROM pg_stat_user_tables WHERE relname = 'objects' "
                "AND last_analyze IS NOT NULL"
            )
            assert cursor.fetchone()[0] == 1


@pytest.mark.django_db
def test_every_generated_shape_is_brought_in_as_a_user_brings_it(tmp_path, activate_save):
    """The benches vary the world's shape between runs: each shape is a file the import
    takes whole (readable-v1 once wrote a "thought", which the first era never had)."""
    from memory.models import BufferEntry

    for name in ("uuid-head", "readable-v1"):
        path = tmp_path / f"{name}.sqlite"
        info = generate_omnia_world(path, Shape.named(name, rows=600, entities=12, hot_rows=90))
        call_command("import_omnia", str(path), "--as", name, verbosity=0)
        activate_save(name)
        assert BufferEntry.objects.count() == info["rows"]
        assert BufferEntry.objects.filter(owner_id=info["viewer"]).count() == info["viewer_rows"]
