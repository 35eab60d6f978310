"""Events (issue 27 items 1, 2, 3, 7): the witness rows of one moment are one event with a
stable id; its page and JSON twin show every witness's line, labels and leaks side by side;
every buffer line says how many saw it."""

from __future__ import annotations

import json
import sqlite3
from collections import defaultdict
from urllib.parse import quote

import pytest

from memory.active_save import scoped_cursor, use
from memory.engine import events
from memory.engine.errors import NotFound
from memory.engine.knowledge import get_viewer
from memory.engine.saves import get_save
from memory.engine.write_door import remember, retract
from memory.models import BufferEntry, ObjectType, WorldObject
from memory.selectors import buffer as buffer_reads
from memory.selectors import entries as entry_reads
from memory.selectors import events as event_reads
from tests.helpers import CHEST, FIXTURES, TAVERN_V1, TAVERN_V2

GREETING = {
    "type": "dialogue",
    "content": 'entity@bob[I] say "Well met" to entity@alice[her]',
    "actorId": "bob",
    "targetIds": ["alice"],
    "modifiers": [],
}
NOON = "2026-07-06T12:00:00.000Z"


def _every_line(viewer_id: str) -> dict[str, str | None]:
    """entry id -> the line the viewer's own buffer shows, read page by page."""
    viewer = get_viewer(viewer_id)
    lines: dict[str, str | None] = {}
    before = None
    while True:
        page = buffer_reads.buffer_page(viewer, before=before, limit=500)
        lines.update((e.id, e.line) for e in page.entries)
        if page.older is None:
            return lines
        before = page.older


def _groups_in_file(path) -> dict[tuple, set[str]]:
    """(world, timestamp, intent) -> row ids: a direct SQL grouping of the omnia file."""
    with sqlite3.connect(path) as conn:
        rows = conn.execute(
            "SELECT o.world_id, b.timestamp, b.intent_json, group_concat(b.id, char(31)) "
            "FROM buffer_entries b JOIN objects o ON o.id = b.owner_id "
            "GROUP BY o.world_id, b.timestamp, b.intent_json"
        ).fetchall()
    return {(w, t, i): set(ids.split("\x1f")) for w, t, i, ids in rows}


def _groups_in_store() -> dict[tuple, set[str]]:
    """The same grouping over the active save's rows (the demo has no omnia file)."""
    with scoped_cursor() as cursor:
        cursor.execute(
            "SELECT o.world_id, b.timestamp, b.intent_json, b.id FROM buffer_entries b "
            "JOIN objects o ON o.game_save_id = b.game_save_id AND o.id = b.owner_id "
            "WHERE b.game_save_id = %(save)s"
        )
        grouped: dict[tuple, set[str]] = defaultdict(set)
        for world, timestamp, intent, entry_id in cursor.fetchall():
            grouped[(world, timestamp, intent)].add(entry_id)
    return grouped


def _check_every_event(groups: dict[tuple, set[str]]) -> int:
    """Every row's event holds exactly its group's rows, and each witness line is the line
    of that witness's own buffer, character for character. Returns the events checked."""
    owners = dict(BufferEntry.objects.values_list("id", "owner_id"))
    lines: dict[str, dict[str, str | None]] = {}
    seen: set[str] = set()
    for (world, timestamp, intent), ids in groups.items():
        event = events.event_id(world, timestamp, intent)
        assert event not in seen, "two groups of the file made one event"
        seen.add(event)
        view = event_reads.event_view(event)
        assert {w.entry.id for w in view.witnesses} == ids
        for w in view.witnesses:
            assert owners[w.entry.id] == w.viewer.id
            if w.viewer.id not in lines:
                lines[w.viewer.id] = _every_line(w.viewer.id)
            assert w.entry.line == lines[w.viewer.id][w.entry.id]
        for viewer_id in {owners[i] for i in ids}:
            viewer = get_viewer(viewer_id)
            mine = [entry_reads.get_entry(viewer, i) for i in ids if owners[i] == viewer_id]
            refs = event_reads.buffer_events(viewer, mine)
            assert {(r.event, r.witness_count) for r in refs.values()} == {(event, len(ids))}
    return len(seen)


@pytest.mark.parametrize("name", [TAVERN_V1, TAVERN_V2])
def test_events_on_the_bundled_saves_match_a_grouping_of_the_file(two_eras, name) -> None:
    groups = _groups_in_file(FIXTURES / f"{name}.sqlite")
    with use(get_save(name)):
        assert _check_every_event(groups) == {TAVERN_V1: 14, TAVERN_V2: 13}[name]
    # The file holds up to three witnesses a moment.
    assert max(len(ids) for ids in groups.values()) == 3


def test_events_on_the_demo_match_a_grouping_of_its_rows(demo) -> None:
    groups = _groups_in_store()
    assert _check_every_event(groups) == len(groups) > 10
    assert BufferEntry.objects.count() == sum(len(ids) for ids in groups.values())


def _write(owner: str, intent: dict, timestamp: str = NOON) -> str:
    return remember(owner, intent, timestamp=timestamp, location_id="tavern-main").entry.id


def test_key_order_and_whitespace_do_not_split_an_event(cast) -> None:
    first = _write("alice", GREETING)
    second = _write("charlie", GREETING)
    respaced = json.dumps(dict(reversed(list(GREETING.items()))), indent=2)
    BufferEntry.objects.filter(id=second).update(intent_json=respaced)
    refs = {}
    for owner, entry_id in (("alice", first), ("charlie", second)):
        viewer = get_viewer(owner)
        refs.update(event_reads.buffer_events(viewer, [entry_reads.get_entry(viewer, entry_id)]))
    assert refs[first] == refs[second]
    assert refs[first].witness_count == 2


def test_another_intent_time_or_world_is_another_event(cast) -> None:
    alice_row = _write("alice", GREETING)
    other_words = _write("charlie", {**GREETING, "content": "entity@bob[I] wave"})
    later = _write("bob", GREETING, "2026-07-06T12:00:01.000Z")
    # A second world whose row shares the moment's time and intent byte for byte.
    WorldObject.objects.create(id="elsewhere", type=ObjectType.WORLD)
    WorldObject.objects.create(id="dora", type=ObjectType.ENTITY, world_id="elsewhere")
    dora_row = _write("dora", GREETING)
    ids = {}
    for owner, entry_id in (
        ("alice", alice_row),
        ("charlie", other_words),
        ("bob", later),
        ("dora", dora_row),
    ):
        viewer = get_viewer(owner)
        entry = entry_reads.get_entry(viewer, entry_id)
        ref = event_reads.buffer_events(viewer, [entry])[entry_id]
        assert ref.witness_count == 1
        ids[owner] = ref.event
    assert len(set(ids.values())) == 4


def test_a_retracted_witness_stays_and_the_id_holds(cast) -> None:
    rows = {owner: _write(owner, GREETING) for owner in ("alice", "bob", "charlie")}
    event = events.witnesses_of(events.rows_at([NOON])[0].event)[0].event
    retract(rows["charlie"])
    view = event_reads.event_view(event)
    assert [w.viewer.id for w in view.witnesses] == ["alice", "charlie", "bob"]  # by name
    assert [w.entry.retracted for w in view.witnesses] == [False, True, False]
    # A quarantined row (no id: the buffers cannot show it) is no witness; the rest stay.
    BufferEntry.objects.filter(id=rows["alice"]).update(id="")
    view = event_reads.event_view(event)
    assert [w.viewer.id for w in view.witnesses] == ["charlie", "bob"]


def test_an_event_id_that_names_nothing_is_not_found(cast) -> None:
    for bad in ("nothing", f"{NOON}~zz", f"{NOON}~{'0' * 16}", "~"):
        with pytest.raises(NotFound):
            event_reads.event_view(bad)


def _tavern_event(two_eras, name: str, timestamp: str) -> str:
    with use(get_save(name)):
        (row,) = {r.event: r for r in events.rows_at([timestamp])}.values()
        return row.event


def test_the_api_twin_gives_each_witness_line_labels_and_leaks(two_eras, reader_client) -> None:
    event = _tavern_event(two_eras, TAVERN_V1, NOON)
    r = reader_client.get(f"/api/saves/{TAVERN_V1}/events/{quote(event)}")
    assert r.status_code == 200, r.content
    body = r.json()
    assert body["event"] == event
    assert (body["timestamp"], body["kind"], body["actor_id"]) == (NOON, "dialogue", "bob")
    by_viewer = {w["viewer_id"]: w for w in body["witnesses"]}
    assert sorted(by_viewer) == ["alice", "bob", "charlie"]
    alice = by_viewer["alice"]
    assert set(alice) >= {"viewer_id", "viewer_name", "entry_id", "line", "labels", "leaks"}
    with use(get_save(TAVERN_V1)):
        own = entry_reads.get_entry(get_viewer("alice"), alice["entry_id"]).line
    assert alice["line"] == own
    assert by_viewer["bob"]["labels"]["bob"] == "you"
    # alice's line says "Bob greets Charlie": names she does not know are leaks in it.
    assert {leak["text"] for leak in alice["leaks"]} >= {"Bob"}
    for leak in alice["leaks"]:
        assert alice["line"][leak["start"] : leak["end"]] == leak["text"]


def test_labels_show_true_names_strangers_and_differences(cast, reader_client) -> None:
    for owner in ("alice", "bob", "charlie"):
        _write(owner, GREETING)
    (event,) = {r.event for r in events.rows_at([NOON])}
    body = reader_client.get(f"/api/saves/cast/events/{quote(event)}").json()
    labels = {w["viewer_id"]: w["labels"] for w in body["witnesses"]}
    kinds = {w["viewer_id"]: w["label_kinds"] for w in body["witnesses"]}
    assert labels == {
        "alice": {"bob": "the hooded figure", "alice": "you"},
        "bob": {"bob": "you", "alice": "the traveller"},
        "charlie": {"bob": "Gareth", "alice": "an unfamiliar figure"},
    }
    assert kinds["charlie"] == {"bob": "true-name", "alice": "unfamiliar"}
    assert {p["id"]: p["called_differently"] for p in body["participants"]} == {
        "bob": True,
        "alice": True,
    }
    page = reader_client.get(f"/saves/cast/events/{quote(event)}/")
    html = page.content.decode()
    assert page.status_code == 200
    assert "called differently" in html and "true name" in html
    assert "Charlie calls Gareth by name" in html
    # Each witness links to the line in its own buffer.
    assert html.count("?before=") == 3 and "line=" in html


def test_the_buffer_twin_and_panel_carry_the_event(
    cast, reader_client, django_assert_max_num_queries
) -> None:
    for minute in range(6):
        for owner in ("alice", "charlie")[: 1 + minute % 2]:
            _write(
                owner,
                {**CHEST, "description": f"opened it {minute}"},
                f"{NOON[:14]}0{minute}:00.000Z",
            )
    items = reader_client.get("/api/saves/cast/viewers/alice/buffer").json()["items"]
    assert [i["witness_count"] for i in items] == [1, 2, 1, 2, 1, 2]
    assert all(i["event"].startswith(i["timestamp"] + "~") for i in items)
    # The counts cost one statement however many lines the page holds.
    with django_assert_max_num_queries(30) as few:
        reader_client.get("/api/saves/cast/viewers/alice/buffer?limit=2")
    with django_assert_max_num_queries(len(few.captured_queries)):
        reader_client.get("/api/saves/cast/viewers/alice/buffer?limit=6")
    panel = reader_client.get("/saves/cast/viewers/alice/buffer/", headers={"HX-Request": "true"})
    html = panel.content.decode()
    assert html.count('class="seen-by"') == 6
    assert f'href="/saves/cast/events/{items[1]["event"]}/"' in html


def test_hostile_text_in_an_event_renders_escaped(cast, reader_client) -> None:
    hostile = {**CHEST, "description": "<script>alert(1)</script> opened the chest"}
    _write("alice", hostile)
    _write("charlie", hostile)
    (event,) = {r.event for r in events.rows_at([NOON])}
    html = reader_client.get(f"/saves/cast/events/{quote(event)}/").content.decode()
    assert "<script>alert(1)" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html


def test_unknown_events_are_a_clear_404(cast, reader_client) -> None:
    _write("alice", GREETING)
    for bad in ("nothing", f"{NOON}~{'0' * 16}", "a%2Fb"):
        page = reader_client.get(f"/saves/cast/events/{bad}/")
        assert page.status_code == 404
        api = reader_client.get(f"/api/saves/cast/events/{bad}")
        assert api.status_code == 404
        assert api.json()["code"] == "not_found"


# --- search across a save (item 4) -------------------------------------------------------------


def _brute_force(words: str) -> list[str]:
    """Every event one of whose witnesses' lines (as the buffer shows it) holds the words,
    newest first: every row of the save rendered and read."""
    from memory.engine.buffer.words import WordSearch, query_words, searched_text

    search = WordSearch(query_words(words))
    found = set()
    for owner in set(BufferEntry.objects.values_list("owner_id", flat=True)):
        viewer = get_viewer(owner)
        for e in buffer_reads.buffer_page(viewer, limit=500).entries:
            if search.matches(searched_text(e.line, e.intent_json, e.outcome_json)):
                found.add(events.event_id(viewer.obj.world_id, e.timestamp, e.intent_json))
    return sorted(found, key=lambda ev: (ev.rpartition("~")[0], ev), reverse=True)


def _searched(words: str, limit: int = 3) -> list[str]:
    """Every event the search pages through, following its cursor."""
    found, before = [], None
    while True:
        page = event_reads.search(words, before=before, limit=limit).page
        found += [e.event for e in page.events]
        if page.older is None:
            return found
        before = page.older


QUERIES = [
    "bob",
    "gareth",
    "hooded fig",
    "bartender",
    "you",
    "hello",
    "ale mug",
    "cellar",
    "unfamiliar",
    "succeeded",
    "greets",
    "12",
    "spoke",
    "latch lock",
    "zzz",
]


@pytest.mark.parametrize("name", [TAVERN_V1, TAVERN_V2])
def test_search_finds_every_matching_event_and_nothing_else(two_eras, name, monkeypatch) -> None:
    from memory.engine import text_index

    narrowed = []
    real = text_index.save_candidates

    def spy(*args, **kwargs):
        found = real(*args, **kwargs)
        narrowed.append(found is not None)
        return found

    monkeypatch.setattr(text_index, "save_candidates", spy)
    calls_before = len(narrowed)
    with use(get_save(name)):
        hits = 0
        for q in QUERIES:
            expected = _brute_force(q)
            assert _searched(q) == expected, q
            hits += len(expected)
        assert hits > 20
    # The text index narrowed most searches ("you", a word the renderer writes, and a v1
    # clock's "12" read the moments in order instead).
    assert narrowed.count(True) >= 10 > calls_before


def test_search_on_the_demo_matches_a_brute_force_scan(demo) -> None:
    words = {w for line in _every_line("npc-pip").values() if line for w in line.split()[2:5]}
    for q in sorted(words)[:12] + ["harbor", "you"]:
        assert _searched(q, limit=5) == _brute_force(q), q


def test_the_search_twin_and_page(two_eras, reader_client) -> None:
    r = reader_client.get(f"/api/saves/{TAVERN_V1}/search?q=gareth&limit=2")
    assert r.status_code == 200, r.content
    body = r.json()
    assert [set(i) for i in body["items"]] == [{"event", "timestamp", "witnesses"}] * 2
    first = body["items"][0]
    assert any(w["matched"] and "Gareth" in w["line"] for w in first["witnesses"])
    assert {w["viewer_id"] for w in first["witnesses"]} <= {"alice", "bob", "charlie"}
    more = reader_client.get(
        f"/api/saves/{TAVERN_V1}/search", {"q": "gareth", "before": body["older"]}
    ).json()
    assert more["items"][0]["timestamp"] <= body["items"][-1]["timestamp"]
    with use(get_save(TAVERN_V1)):
        assert [i["event"] for i in body["items"] + more["items"]] == _brute_force("gareth")
    bad = reader_client.get(f"/api/saves/{TAVERN_V1}/search?q=x&before=nonsense")
    assert (bad.status_code, bad.json()["code"]) == (400, "bad_cursor")
    page = reader_client.get(f"/saves/{TAVERN_V1}/search/?q=gareth")
    html = page.content.decode()
    assert page.status_code == 200 and html.count('class="panel found-event"') == len(
        body["items"] + more["items"]
    )
    # The header of every save page carries the search box.
    viewer = reader_client.get(f"/saves/{TAVERN_V1}/viewers/alice/").content.decode()
    assert f'action="/saves/{TAVERN_V1}/search/"' in viewer
    fragment = reader_client.get(
        f"/saves/{TAVERN_V1}/search/?q=gareth", headers={"HX-Request": "true"}
    ).content.decode()
    assert fragment.lstrip().startswith('<section id="search-results"')


@pytest.mark.parametrize("q", ["you", "gareth"])
def test_a_search_out_of_time_goes_on_from_where_it_stopped(two_eras, monkeypatch, q) -> None:
    from memory.engine import event_search

    monkeypatch.setattr(event_search, "TIMESTAMPS_PER_READ", 2)
    with use(get_save(TAVERN_V1)):
        found, before, stops = [], None, 0
        while True:
            page = event_search.search_events(q, before=before, limit=4, seconds=0)
            found += [e.event for e in page.events]
            stops += page.searched_to is not None
            if page.older is None:
                break
            before = page.older
        assert found == _brute_force(q)
        assert stops > 2


def test_the_entry_page_links_its_moment(cast, reader_client) -> None:
    rows = {owner: _write(owner, GREETING) for owner in ("alice", "charlie")}
    html = reader_client.get(f"/saves/cast/viewers/alice/entries/{rows['alice']}/").content
    (event,) = {r.event for r in events.rows_at([NOON])}
    assert f'href="/saves/cast/events/{quote(event, safe="~:")}/"'.encode() in html
    assert b"2 witnesses: the moment as each remembers it" in html
