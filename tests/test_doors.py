"""The read doors: sessions(), digest(), episodes() — bounded, honest, viewer-relative."""

from __future__ import annotations

import hashlib

import pytest

from memory.engine.cursor import BadCursor
from memory.engine.errors import NotFound
from memory.engine.projections import run_cycle
from memory.engine.projections.doors import digest, episodes, sessions
from memory.engine.write_door import retract
from memory.models import Attribute, AttributeAcl, WorldObject
from tests.helpers import at, count_rows, write

EMPTY_HASH = hashlib.sha256(b"").hexdigest()


@pytest.fixture
def places(cast):
    def place(id_: str, attrs: list[tuple[str, str, str]]):
        obj = WorldObject.objects.create(id=id_, type="location", world_id=cast.world.id)
        for name, value, visibility in attrs:
            Attribute.objects.create(
                object_id=obj.id, name=name, value=value, visibility=visibility
            )
        return obj

    place("tavern-main", [("description", "the tavern common room", "PUBLIC")])
    place(
        "cellar",
        [("name", "the smugglers' cellar", "PRIVATE"), ("description", "a damp cellar", "PUBLIC")],
    )
    AttributeAcl.objects.create(object_id="cellar", attribute_name="name", entity_id="bob")
    place("vault", [("description", "the guild vault", "PRIVATE")])
    return cast


def test_sessions_virgin_store_answers_an_empty_page(save):
    WorldObject.objects.create(id="w", type="world")
    WorldObject.objects.create(id="hermit", type="entity", world_id="w")
    page = sessions("hermit")
    assert (page.items, page.rows_visited, page.next_cursor) == ([], 0, None)
    assert digest("hermit") == digest("hermit", known_hash=None)
    assert (digest("hermit").lines, digest("hermit").hash, digest("hermit").rows_visited) == (
        [],
        EMPTY_HASH,
        0,
    )
    assert (episodes("hermit").items, episodes("hermit").rows_visited) == ([], 0)


def test_doors_refuse_an_unknown_viewer(save):
    for door in (sessions, digest, episodes):
        with pytest.raises(NotFound, match="no entity with id 'nobody'"):
            door("nobody")


def test_doors_refuse_a_malformed_cursor(cast):
    with pytest.raises(BadCursor, match="malformed cursor"):
        sessions("alice", before="%%%")
    with pytest.raises(BadCursor, match="malformed cursor"):
        episodes("alice", before="WyJ4Il0")  # ["x"]: not an ordinal


def test_sessions_newest_first_with_ties_by_key_and_keyset_pages(cast):
    write("alice", 10, conversation="c1")
    write("alice", 20, conversation="c2")
    write("alice", 20, conversation="c3")
    write("alice", 5, location="cellar")
    run_cycle()
    first = sessions("alice", limit=2)
    assert [i.session_key for i in first.items] == ["c3", "c2"]
    assert first.next_cursor is not None
    second = sessions("alice", limit=2, before=first.next_cursor)
    assert [i.session_key for i in second.items] == ["c1", "scene:cellar"]
    assert second.next_cursor is None
    assert [(i.kind, i.first_at, i.memory_count) for i in second.items] == [
        ("conversation", at(10), 1),
        ("scene", at(5), 1),
    ]


def test_sessions_live_counts_leave_out_retracted_members_at_read_time(cast):
    gone = write("alice", 0, conversation="c1")
    write("alice", 1, conversation="c1", kind="action")
    write("alice", 2, location="cellar")
    retract(gone)
    run_cycle()
    page = sessions("alice")
    assert [
        (i.session_key, i.memory_count, i.dialogue_count, i.live_count) for i in page.items
    ] == [("scene:cellar", 1, 1, 1), ("c1", 2, 1, 1)]
    # Rows visited: two session rows and the one retracted member the live count read.
    assert page.rows_visited == 3


def test_sessions_live_count_stops_at_the_watermark(cast):
    write("alice", 0, conversation="c1")
    run_cycle()
    late = write("alice", 1, conversation="c1")
    retract(late)  # written and retracted after the fold: not subtracted from a count it is not in
    assert [(i.memory_count, i.live_count) for i in sessions("alice").items] == [(1, 1)]


def test_sessions_rows_visited_is_what_the_queries_returned(cast, monkeypatch):
    for minute in range(3):
        gone = write("alice", minute, conversation=f"c{minute}")
    retract(gone)
    run_cycle()
    with count_rows(monkeypatch) as counter:
        page = sessions("alice", limit=2)
    assert page.rows_visited == counter.total("memory_sessions", "buffer_entries") == 3 + 1


def test_digest_names_sessions_by_place_without_ids(places):
    write("alice", 0, conversation="conv-7f3a")
    write("alice", 38, conversation="conv-7f3a", kind="action")
    write("alice", 39, conversation="conv-7f3a")
    write("alice", 50, location="cellar", kind="action")
    write("alice", 55, location="vault")
    write(
        "alice", 56, location=None, conversation="conv-9"
    )  # remember() files it where alice stands
    run_cycle()
    d = digest("alice")
    assert d.lines == [
        "A conversation at the tavern common room from 12:00 PM to 12:39 PM: 3 memories, 2 spoken",
        "A scene at a damp cellar at 12:50 PM: 1 memory, 0 spoken",
        "A scene at an unfamiliar place at 12:55 PM: 1 memory, 1 spoken",
        "A conversation at the tavern common room at 12:56 PM: 1 memory, 1 spoken",
    ]
    assert d.hash == hashlib.sha256("\n".join(d.lines).encode()).hexdigest()
    assert not d.unchanged
    assert all("conv-" not in line and "cellar" not in line.split("damp")[0] for line in d.lines)


def test_digest_uses_private_place_names_only_for_viewers_allowed_to_see_them(places):
    write("bob", 0, location="cellar")
    write("alice", 0, location="cellar")
    run_cycle()
    assert digest("bob").lines == [
        "A scene at the smugglers' cellar at 12:00 PM: 1 memory, 1 spoken"
    ]
    assert digest("alice").lines == ["A scene at a damp cellar at 12:00 PM: 1 memory, 1 spoken"]


def test_digest_known_hash_answers_unchanged_with_no_lines(places):
    write("alice", 0, conversation="c1")
    run_cycle()
    first = digest("alice")
    again = digest("alice", known_hash=first.hash)
    assert (again.lines, again.hash, again.unchanged) == ([], first.hash, True)
    # The hash saves the caller's tokens, not the engine's reads.
    assert again.rows_visited == first.rows_visited
    write("alice", 1, conversation="c1")
    run_cycle()
    moved = digest("alice", known_hash=first.hash)
    assert (moved.unchanged, moved.lines) == (
        False,
        [
            "A conversation at the tavern common room from 12:00 PM to 12:01 PM: 2 memories, 2 spoken"
        ],
    )


def test_digest_spans_days_with_dates(places):
    write("alice", 0, conversation="c1")
    write("alice", 13 * 60, conversation="c1")  # 01:00 the next day
    run_cycle()
    assert digest("alice").lines == [
        "A conversation at the tavern common room from Jul 6, 12:00 PM to Jul 7, 1:00 AM: 2 memories, 2 spoken"
    ]


def test_digest_rows_visited_is_what_the_queries_returned(places, monkeypatch):
    write("alice", 0, conversation="c1")
    write("alice", 1, location="cellar")
    run_cycle()
    with count_rows(monkeypatch) as counter:
        d = digest("alice")
    # 2 sessions, 1 last member (for the conversation's place), 3 place attributes.
    assert (
        d.rows_visited
        == counter.total("memory_sessions", "buffer_entries", "attributes", "attribute_acl")
        == 6
    )


def test_episodes_door_newest_first_with_pages(cast):
    write("alice", 0)
    write("alice", 40)
    write("alice", 80)
    run_cycle()
    page = episodes("alice", limit=2)
    assert [(e.ordinal, e.first_at, e.is_open) for e in page.items] == [
        (3, at(80), True),
        (2, at(40), False),
    ]
    assert page.rows_visited == 3
    rest = episodes("alice", limit=2, before=page.next_cursor)
    assert ([e.ordinal for e in rest.items], rest.next_cursor, rest.rows_visited) == ([1], None, 1)


def test_sessions_and_digest_order_by_time_not_by_text(cast):
    from memory.engine.write_door import remember

    def said(conversation: str, timestamp: str) -> None:
        remember(
            "alice",
            {
                "type": "dialogue",
                "originalText": "hm",
                "description": "hm",
                "actorId": "alice",
                "targetIds": [],
            },
            timestamp=timestamp,
            conversation_id=conversation,
            location_id="tavern-main",
        )

    said("tokyo", "2026-07-07T09:00:00+09:00")  # 00:00Z: the earliest, though "09" sorts late
    said("noon", "2026-07-07T08:00:00.000Z")
    said("whole", "2026-07-07T03:00:00Z")  # before 03:00:00.500Z, though "Z" > "."
    said("half", "2026-07-07T03:00:00.500Z")
    run_cycle()
    keys = [s.session_key for s in sessions("alice").items]
    assert keys == ["noon", "half", "whole", "tokyo"]
    first, second = sessions("alice", limit=2), None
    second = sessions("alice", limit=2, before=first.next_cursor)
    assert [s.session_key for s in first.items + second.items] == keys
    assert second.next_cursor is None
    # the digest's latest sessions, oldest first, by the same time
    assert [line.split(" at ")[2].split(":")[0:2] for line in digest("alice").lines] == [
        ["12", "00 AM"],
        ["3", "00 AM"],
        ["3", "00 AM"],
        ["8", "00 AM"],
    ]


def test_a_conversation_named_like_a_scene_keeps_its_own_session(cast):
    from memory.engine.write_door import remember

    def said(conversation: str | None, minute: int) -> None:
        remember(
            "alice",
            {
                "type": "dialogue",
                "originalText": "hm",
                "description": "hm",
                "actorId": "alice",
                "targetIds": [],
            },
            timestamp=f"2026-07-06T12:{minute:02d}:00.000Z",
            conversation_id=conversation,
            location_id="tavern-main",
        )

    said(None, 1)  # the tavern's scene
    said("scene:tavern-main", 2)  # a conversation whose id reads like that scene's key
    said("conversation:scene:tavern-main", 3)  # and one that reads like the escaped form
    run_cycle()
    items = sessions("alice").items
    assert sorted((s.session_key, s.kind, s.memory_count) for s in items) == [
        ("conversation:conversation:scene:tavern-main", "conversation", 1),
        ("conversation:scene:tavern-main", "conversation", 1),
        ("scene:tavern-main", "scene", 1),
    ]


@pytest.mark.parametrize("conversations", [3, 25])
def test_the_sessions_panel_digest_is_the_digest_door_s(places, conversations):
    """The sessions panel makes its digest from the sessions it shows (read once): the same
    lines and hash digest() gives, with fewer sessions than the digest holds and with more,
    places of every kind (public, granted, hidden) among them."""
    from memory.selectors.projections import sessions_panel

    where = ["tavern-main", "cellar", "vault"]
    for n in range(conversations):
        write("bob", 3 * n, conversation=f"c{n:02}", location=where[n % 3])
        write("bob", 3 * n + 1, location=where[(n + 1) % 3])
    run_cycle()
    panel, door = sessions_panel("bob"), digest("bob")
    assert (panel.digest.lines, panel.digest.hash) == (door.lines, door.hash)
    assert len(door.lines) == min(2 * conversations, 20)
    said = "\n".join(door.lines)
    for place in ("the tavern common room", "an unfamiliar place", "the smugglers' cellar"):
        assert place in said
