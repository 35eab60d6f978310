"""The buffer's text index (issue 25, item 3): `q` is a word search (each query word begins a
word of the line as the viewer reads it), and the index that answers it never leaves out a
line that holds the words. It is kept by the import, the follower, the write doors and every
delete; SQLite's FTS5 `integrity-check` compares it with the rows themselves."""

from __future__ import annotations

import json
import re
import sqlite3
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.db import connection
from django.test import override_settings
from hypothesis import example, given, settings
from hypothesis import strategies as st

from memory.active_save import current_id, use
from memory.engine.buffer.rendered import render_entry
from memory.engine.buffer.words import (
    MAX_IDS,
    MAX_TERM_CHARS,
    RENDERER_WORDS,
    StoredWords,
    TermPlanner,
    WordSearch,
    query_words,
    searched_text,
    uses_term,
    words_of,
)
from memory.engine.clock import now_us
from memory.engine.knowledge import Viewer, get_viewer
from memory.engine.saves import delete_save, get_save, purge_retired
from memory.engine.write_door import remember, retract
from memory.models import BufferEntry, Save, WorldObject
from memory.selectors.buffer import buffer_page, names_in, viewer_rows
from memory.worlds.live import Follower
from memory.worlds.live.apply import BULK_WORDS
from memory.worlds.standin import StandIn
from memory.worlds.synthetic import Shape, generate_omnia_world
from tests.helpers import at

# --- the words of a search ----------------------------------------------------------------


@pytest.mark.pure
def test_a_query_word_begins_a_word_of_the_line_lowercased():
    line = "The hooded figure draws a knife (Outcome: Failed - the door's_lock held)"
    assert query_words("HOOD  hood, fig") == ("hood", "fig")
    found = {q: WordSearch(query_words(q)).matches(line) for q in [
        "hood", "FIG", "hooded figure", "figure hooded", "knife outcome", "lock", "s",
        "ooded", "hoodie", "door's", "kni fe", "knifes",
    ]}  # fmt: skip
    assert found == {
        "hood": True, "FIG": True, "hooded figure": True, "figure hooded": True,
        "knife outcome": True, "lock": True, "s": True, "ooded": False, "hoodie": False,
        "door's": True, "kni fe": False, "knifes": False,
    }  # fmt: skip


@pytest.mark.pure
def test_a_line_that_cannot_be_shown_is_searched_in_its_stored_text():
    assert searched_text(None, '{"type":"sing","content":"a ferry"}', None) == (
        '{"type":"sing","content":"a ferry"} '
    )
    assert searched_text("I sing", "{}", '{"isValid":true}') == "I sing"


@pytest.mark.pure
def test_what_the_renderer_writes_itself_is_searched_in_order():
    planner = TermPlanner("alice", {"bob": "the hooded figure", "ed": "Ed"})
    # Words only the renderer writes (the viewer's self, an unknown id, a verb's new form, a
    # v1 clock) cannot be looked up: every line could hold them.
    assert [planner.term(w) for w in ("my", "unfam", "succeeded", "has", "12")] == [None] * 5
    assert {"you", "someone", "am", "pm", "themselves", "figure"} <= RENDERER_WORDS
    hooded = planner.term("hooded")
    assert hooded.prefixes == {"hooded"} and hooded.ids == {("bob",)}
    # A verb the agreement wrote ("tries"), text written against a tag ("xentity@…"), a word
    # running on past an alias ("Edwin" from "entity@ed[Ed]win"): the stored words it came from.
    tries = planner.term("tries")
    assert {"try", "trie", "tri", "trentity", "triesentity"} - tries.words == {"triesentity"}
    assert {"win"} <= planner.term("edwin").prefixes
    assert uses_term("npc-7").ids == {("npc", "7")}
    assert uses_term("Åsa") is None and uses_term("--") is None
    crowd = TermPlanner("alice", {f"e{i}": "a sailor" for i in range(MAX_IDS + 1)})
    assert crowd.term("sail") is None  # a name too many share
    # A word past MAX_TERM_CHARS is read in order: its term would grow with its square.
    assert planner.term("x" * MAX_TERM_CHARS) is not None
    assert planner.term("x" * (MAX_TERM_CHARS + 1)) is None


@pytest.mark.pure
def test_a_row_whose_stored_text_cannot_hold_the_words_is_not_rendered():
    planner = TermPlanner("alice", {"bob": "the hooded figure"})
    check = StoredWords([planner.term("hood"), planner.term("ferr")])
    rows = {
        "names bob, says ferry": ('{"content":"entity@bob[I] take the ferry"}', None),
        "says hood and ferry": ('{"content":"a hood on the\\nferry"}', None),
        "names bob only": ('{"content":"entity@bob[I] wave"}', None),
        "says ferry only": ('{"content":"a ferry"}', '{"reason":"x"}'),
        "not text": (b"\x00", None),
    }
    assert {name: check.hold(*row) for name, row in rows.items()} == {
        "names bob, says ferry": True,
        "says hood and ferry": True,
        "names bob only": False,
        "says ferry only": False,
        "not text": True,
    }


VIEWERS = {
    "alice": {"bob": "the hooded figure", "charlie": "the bartender", "ed": "Ed"},
    "bob": {"alice": "the traveller", "ed": "Old Ed's boy"},
    "charlie": {"bob": "Gareth"},
}
_PIECES = st.sampled_from(
    [
        "entity@bob[", "entity@alice[", "entity@charlie[", "entity@ed[", "entity@zed[",
        "entity@bob", "I", "me", "my", "He", "himself", "myself", "Bob", "her", "them", "]",
        " try", " tries", " wish", " walk", " am", " is", "'m", "'s", " and", " step", " ferry",
        "ish", "x", " 12", ".", " I", " my", " mine", ' "', " ", "win", "\\n", "’s",
    ]
)  # fmt: skip


def _index_holds(term, stored: list[str], any_word: bool) -> bool:
    """What the index answers for one term over one row's stored words."""
    return (
        any_word
        or any(w.startswith(p) for p in term.prefixes for w in stored)
        or bool(term.words & set(stored))
        or any(set(words) <= set(stored) for words in term.ids)
    )


def _every_prefix_is_found(viewer: str, intent: dict, outcome: dict | None) -> None:
    entry = BufferEntry(
        id="m",
        owner_id=viewer,
        timestamp="2026-07-06T12:00:00.000Z",
        intent_json=json.dumps(intent, ensure_ascii=False),  # as omnia's JSON.stringify
        outcome_json=json.dumps(outcome) if outcome else None,
        created_at=1,
        untimed=False,
    )
    rendered = render_entry(entry, Viewer.of(viewer, VIEWERS[viewer]))
    text = searched_text(rendered.line, rendered.intent_json, rendered.outcome_json)
    stored = words_of(f"{entry.intent_json} {entry.outcome_json or ''}")
    any_word = re.search(r"\\[bfnrtu]", entry.intent_json) is not None  # ANY_WORD's rows
    planner = TermPlanner(viewer, VIEWERS[viewer])
    for word in words_of(text):
        for end in range(1, len(word) + 1):
            term = planner.term(word[:end])
            if term is not None:
                assert _index_holds(term, stored, any_word), (text, word[:end])
                # A page reading rows in order lets this row through to be rendered.
                assert StoredWords([term]).hold(entry.intent_json, entry.outcome_json)


@pytest.mark.pure
@given(
    viewer=st.sampled_from(sorted(VIEWERS)),
    actor=st.sampled_from(["alice", "bob", "charlie", "zed"]),
    pieces=st.lists(_PIECES, max_size=14),
    kind=st.sampled_from(["action", "dialogue", "thought", "v1-action", "v1-dialogue"]),
    failed=st.booleans(),
)
# omnia's reading prints a third-person pronoun as written and glues the text after the tag
# to it: "Herentity@bob[" holds "heren", which no stored word begins (found by this test in CI).
@example(viewer="alice", actor="alice", pieces=["entity@bob[", "her", "]", "entity@bob["], kind="action", failed=False)  # fmt: skip
@settings(max_examples=400, deadline=None)
def test_the_index_never_leaves_out_a_line_that_holds_the_words(
    viewer, actor, pieces, kind, failed
):
    """For every word of every line and every query that begins it, the row's stored words
    hold what the index is asked for (or the planner says the index cannot be asked)."""
    text = "".join(pieces).replace("\\n", "\n")
    if kind.startswith("v1-"):
        intent = {"type": kind[3:], "description": text, "actorId": actor}
        intent["targetIds"] = ["bob", "ed"]
    else:
        intent = {"type": kind, "content": text, "actorId": actor, "targetIds": ["charlie"]}
    outcome = {"isValid": False, "reason": "the door held"} if failed else None
    _every_prefix_is_found(viewer, intent, outcome)


# --- the index in the store ---------------------------------------------------------------


def assert_index_matches_the_rows() -> None:
    """SQLite: FTS5 compares the index with the rows (a row missing from it, or one it holds
    that is gone, fails). PostgreSQL's GIN index is kept by the database itself."""
    if connection.vendor == "sqlite":
        with connection.cursor() as cursor:
            cursor.execute(
                "INSERT INTO buffer_fts (buffer_fts, rank) VALUES ('integrity-check', 1)"
            )


def every_match(viewer, q: str = "", uses: str = "") -> list[str]:
    """What reading every row in order finds, newest first: the answer to compare with."""
    search = WordSearch(query_words(q))
    found = []
    for row in viewer_rows(viewer).order_by("-timestamp", "-created_at", "-id"):
        entry = render_entry(row, viewer)
        if uses and uses not in names_in(entry):
            continue
        # Both readings (issue 30): a line is found by the words of omnia's or the corrected.
        text = searched_text(
            entry.line, entry.intent_json, entry.outcome_json, entry.line_corrected
        )
        if search.matches(text):
            found.append(entry.id)
    return found


def walk(viewer, **filters) -> tuple[list[str], int]:
    """Every page of a filtered buffer, newest first: (ids, pages that stopped on the budget)."""
    found, stops, cursor = [], 0, None
    while True:
        page = buffer_page(viewer, before=cursor, limit=20, **filters)
        found += [e.id for e in reversed(page.entries)]
        stops += page.searched_to is not None
        cursor = page.older
        if cursor is None:
            return found, stops


@pytest.fixture
def harbour(db, tmp_path):
    """A 2,000-row generated save (uuid ids) imported as a user does, then one old memory of
    the busy viewer that holds a word no other row does."""
    shape = Shape.named("uuid-head", rows=2000, entities=30, hot_rows=600)
    info = generate_omnia_world(tmp_path / "harbour.sqlite", shape)
    call_command("import_omnia", str(tmp_path / "harbour.sqlite"), verbosity=0)
    with use(Save.objects.get(name="harbour")):
        old = remember(
            info["viewer"],
            {
                "type": "thought",
                "content": "A kraken sleeps under the pier",
                "actorId": info["viewer"],  # the write door refuses an actor the save lacks
                "targetIds": [],
                "modifiers": [],
            },
            timestamp="2000-01-01T00:00:00.000Z",
            entry_id="old-kraken",
        )
        for n in range(3):  # old lines with a word only the renderer writes
            remember(
                info["viewer"],
                {"type": "thought", "content": "entity@x[I] sit by entity@x[myself]",
                 "actorId": info["viewer"], "targetIds": [], "modifiers": []},
                timestamp=f"2001-01-0{n + 1}T00:00:00.000Z",
            )  # fmt: skip
        yield {**info, "old": old.entry.id}


def test_a_word_only_in_old_rows_is_found_at_once(harbour):
    viewer = get_viewer(harbour["viewer"])
    with override_settings(OMNIA_BUFFER_SCAN_SECONDS=1e-9):
        page = buffer_page(viewer, q="KRAK")
    assert [e.id for e in page.entries] == ["old-kraken"]
    assert [e.line for e in page.entries] == ["A kraken sleeps under the pier"]
    # One chunk of the newest rows read in order first (a common word fills the page from
    # it), then the one row the index names.
    assert (page.searched_to, page.older, page.newer, page.rows_visited) == (None, None, None, 201)
    assert_index_matches_the_rows()


@pytest.mark.parametrize(
    ("q", "indexed"),
    [("ferry", True), ("lantern near", True), ("keeper", True), ("smuggler succ", True),
     ("themselves", False)],
)  # fmt: skip
def test_a_search_finds_what_reading_every_row_finds(harbour, q, indexed):
    """With no time to spare, pages the index serves never stop, and together they hold
    exactly the lines reading every row finds; where the index cannot help (the renderer
    writes "themselves" for a reflexive tag itself) the budget stops each page and the links go
    on."""
    viewer = get_viewer(harbour["viewer"])
    expected = every_match(viewer, q=q)
    assert expected
    with override_settings(OMNIA_BUFFER_SCAN_SECONDS=1e-9):
        found, stops = walk(viewer, q=q)
    assert found == expected
    assert (stops == 0) == indexed


def test_a_person_is_found_through_the_index(harbour):
    viewer = get_viewer(harbour["viewer"])
    expected = every_match(viewer, uses=harbour["person"])
    with override_settings(OMNIA_BUFFER_SCAN_SECONDS=1e-9):
        assert walk(viewer, uses=harbour["person"]) == (expected, 0)
    assert len(expected) == harbour["person_rows"]


def test_an_alias_finds_the_lines_naming_that_entity(cast, chest):
    """alice calls bob "the hooded figure": her line about him holds those words though the
    row stores only his id; charlie calls him Gareth."""
    remember(
        "charlie",
        {
            "type": "action",
            "content": "entity@bob[I] pour a drink",
            "actorId": "bob",
            "targetIds": [],
            "modifiers": [],
        },
        timestamp=at(4),
        entry_id="m-pour",
    )
    alice, charlie = get_viewer("alice"), get_viewer("charlie")
    chest_id = chest.id
    found = {
        (v.id, q): [(e.id, e.line) for e in buffer_page(v, q=q).entries]
        for v, q in [(alice, "hooded fig"), (alice, "gareth"), (charlie, "GARETH pours")]
    }
    assert found == {
        ("alice", "hooded fig"): [
            (chest_id, "[12:03:00 PM] the hooded figure opened the wooden chest "
             "(Outcome: Succeeded)"),
        ],
        ("alice", "gareth"): [],
        ("charlie", "GARETH pours"): [("m-pour", "Gareth pours a drink")],
    }  # fmt: skip


def _plant(owner: str, row_id: str, intent_json: str) -> None:
    """A row written around every door, as a poison row gets in."""
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO buffer_entries (game_save_id, id, owner_id, timestamp, location_id, "
            "intent_json, created_at, shard) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
            [current_id(), row_id, owner, at(6), "tavern-main", intent_json, now_us(), 0],
        )


def test_a_quarantined_row_never_shows_and_the_index_stays_whole(cast, chest):
    """A row with no id (the fold quarantines it) holds the word but never shows; a row whose
    intent is not JSON shows as undeliverable and is found by its stored text."""
    _plant("alice", "", '{"type": "action", "content": "a kraken rises", "actorId": "bob"}')
    _plant("alice", "m-cut", '{"type": "action", "content": "a kraken ri')
    _plant("alice", "m-deep", '{"type": "action", "x": ' + "[" * 5000 + "]" * 5000 + "}")
    call_command("run_projections", verbosity=0)  # the fold quarantines the row with no id
    alice = get_viewer("alice")
    page = buffer_page(alice, q="kraken")
    assert [(e.id, e.line, e.undeliverable) for e in page.entries] == [
        ("m-cut", None, "intent_json is not JSON")
    ]
    assert every_match(alice, q="kraken") == ["m-cut"]
    assert_index_matches_the_rows()
    BufferEntry.objects.filter(id__in=["", "m-cut", "m-deep"]).delete()
    assert buffer_page(alice, q="kraken").entries == []
    assert_index_matches_the_rows()


ODD = 'door #3 "north"/\\west'  # quotes, a slash and a backslash, escaped in the JSON


def test_uses_finds_an_entity_whose_id_has_odd_characters(cast):
    for entity_id in (ODD, "Åsa-Öberg"):
        WorldObject.objects.create(id=entity_id, type="entity", world_id="tavern")
    alice = WorldObject.objects.get(id="alice")
    alice.aliases_json = json.dumps([["bob", "the hooded figure"], [ODD, "the north door"]])
    alice.save()

    def line(entry_id, targets, words="waves", kind="dialogue"):
        remember(
            "alice",
            {"type": kind, "originalText": words, "description": words, "actorId": "alice",
             "targetIds": targets},
            timestamp=at(len(entry_id)),
            entry_id=entry_id,
        )  # fmt: skip

    line("m-door", [ODD])
    line("m-asa", ["Åsa-Öberg"])
    line("m-words", [], 'knocks on door #3 "north"/\\west', "action")  # words, not a name
    viewer = get_viewer("alice")
    found = {
        who: [(e.id, e.line) for e in buffer_page(viewer, uses=who).entries]
        for who in (ODD, "Åsa-Öberg")
    }
    assert found == {
        ODD: [("m-door", '[12:06:00 PM] you spoke to the north door: "waves"')],
        "Åsa-Öberg": [("m-asa", '[12:05:00 PM] you spoke to an unfamiliar figure: "waves"')],
    }
    assert [e.id for e in buffer_page(viewer, q="north door").entries] == ["m-door", "m-words"]


def test_the_write_doors_keep_the_index(cast, chest):
    alice = get_viewer("alice")
    assert [e.id for e in buffer_page(alice, q="wooden").entries] == [chest.id]
    retract(chest.id)
    assert [e.id for e in buffer_page(alice, q="wooden").entries] == [chest.id]
    BufferEntry.objects.filter(id=chest.id).update(
        intent_json=json.dumps({"type": "action", "description": "opened the iron box",
                                "actorId": "bob", "targetIds": []})
    )  # fmt: skip
    assert [e.id for e in buffer_page(alice, q="iron").entries] == [chest.id]
    assert buffer_page(alice, q="wooden").entries == []
    assert_index_matches_the_rows()


def _world_file(tmp_path, name: str, word: str):
    path = tmp_path / f"{name}.sqlite"
    info = generate_omnia_world(path, Shape.named("uuid-head", rows=600, entities=12, seed=3))
    with sqlite3.connect(path) as conn:
        conn.execute(
            "UPDATE buffer_entries SET intent_json = replace(intent_json, 'rope', ?)", [word]
        )
    return path, info


def test_deleting_a_save_and_replacing_one_keep_the_index(db, tmp_path):
    first, info = _world_file(tmp_path, "first", "hawser")
    second, _ = _world_file(tmp_path, "second", "painter")
    call_command("import_omnia", str(first), "--as", "port", verbosity=0)
    call_command("import_omnia", str(first), "--as", "spare", verbosity=0)

    def found(save: str, word: str) -> int:
        with use(get_save(save)):
            return len(every_match(get_viewer(info["viewer"]), q=word)), len(
                walk(get_viewer(info["viewer"]), q=word)[0]
            )

    assert found("port", "hawser") == found("spare", "hawser") != (0, 0)
    call_command("import_omnia", str(second), "--as", "port", "--replace", verbosity=0)
    assert found("port", "hawser") == (0, 0) and found("port", "painter")[0] > 0
    assert found("port", "painter")[0] == found("port", "painter")[1]
    assert_index_matches_the_rows()
    purge_retired(grace=timedelta(0))  # the retired save's rows go
    assert_index_matches_the_rows()
    delete_save("spare")
    assert_index_matches_the_rows()
    assert found("port", "painter")[0] == found("port", "painter")[1] > 0


def test_the_follower_keeps_the_index_in_bulk_and_row_by_row(db, tmp_path):
    game = StandIn(tmp_path / "game.sqlite", seed=2)
    game.run(1200, 0)  # the first load: one batch, past BULK_WORDS rows, in one statement
    follower = Follower(tmp_path / "game.sqlite", batch_rows=5000)
    assert follower.tick().added["buffer_entries"] >= BULK_WORDS
    with use(get_save("game")):
        assert_index_matches_the_rows()
        before = every_match(get_viewer("mara"), q="tobin reed")
        ids = game.plant_leak()  # a live row: the trigger
        follower.tick()
        mara = get_viewer("mara")
        page = buffer_page(mara, q="tobin reed", limit=500)
        assert [e.id for e in reversed(page.entries)] == [ids[0], *before]
        assert page.entries[-1].line == "I say 'They call him Tobin Reed'"
        game.run(30, 0)  # rows the game deletes, now and then, leave the index too
        follower.tick()
        assert_index_matches_the_rows()
        coils = every_match(get_viewer("mara"), q="coils rope")
        assert coils and walk(get_viewer("mara"), q="coils rope") == (coils, 0)
    game.close()
