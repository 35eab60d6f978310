"""Leak kinds in words where a person reads the save page (issue 28 item 4)."""

from __future__ import annotations

import re

import pytest


@pytest.mark.django_db
def test_save_page_leak_heads_are_words(demo, editor_client) -> None:
    body = editor_client.get("/saves/demo/").content.decode()
    start = body.index('<table class="leak-counts">')
    head = body[start : body.index("</thead>", start)]
    assert head == (
        '<table class="leak-counts">\n    <thead><tr><th scope="col">viewer</th>'
        '<th scope="col">system ids</th><th scope="col">names not known</th>'
        '<th scope="col">private values</th><th scope="col">total</th></tr>'
    )


@pytest.mark.pure
def test_a_long_term_heading_is_its_title_or_else_its_first_words() -> None:
    from memory.engine.longterm.shadowing import heading_of

    assert heading_of("the debt", "ledger-1", "anything") == "the debt"
    # An imported omnia row's title is its id: a person reads its first words instead.
    assert heading_of("ledger-zz9-1", "ledger-zz9-1", "entity@charlie[I] counted the till") == (
        "I counted the till"
    )
    assert heading_of("l-2", "l-2", "one two three four five six seven eight nine") == (
        "one two three four five six seven eight…"
    )
    assert heading_of("l-3", "l-3", "  ") == "an untitled memory"


@pytest.mark.django_db
def test_an_imported_long_term_entry_is_named_by_its_words_not_its_id(
    two_eras, reader_client
) -> None:
    # omnia writes no name for a ledger row and makes its slug of its id: the faces panel and
    # the entry page read "ledger-zz9-1783339320000" where a person wants what it says.
    faces = reader_client.get("/saves/omnia-head-tavern/viewers/charlie/faces/").content.decode()
    titles = re.findall(r'class="face-title">([^<]*)</a>', faces)
    assert titles == ["I counted the till: 40 silver short."]
    entry = reader_client.get(
        "/saves/omnia-head-tavern/viewers/charlie/entries/ledger-zz9-1783339320000/"
    ).content.decode()
    assert (
        '<h1>I counted the till: 40 silver short. <code class="id-hint">'
        "ledger-zz9-1783339320000</code></h1>"
    ) in entry


@pytest.mark.django_db
def test_a_session_is_named_by_its_people_as_the_viewer_calls_them(cast, editor_client) -> None:
    from memory.engine.projections import run_cycle
    from memory.engine.write_door import remember
    from tests.helpers import CHEST

    remember("alice", CHEST, timestamp="2026-07-06T12:03:00.000Z")  # bob opens the chest
    said = {"type": "dialogue", "originalText": "Ale?", "description": "Ale?"}
    remember(
        "alice",
        {**said, "actorId": "charlie", "targetIds": ["alice", "bob"]},
        timestamp="2026-07-06T12:04:00.000Z",
    )
    run_cycle()
    body = editor_client.get(
        "/saves/cast/viewers/alice/sessions/", headers={"HX-Request": "true"}
    ).content.decode()
    # Its latest moment: charlie spoke to alice and bob; alice reads herself out of it.
    names = re.findall(r"<td>(A (?:scene|conversation) [^<\n]*)", body)
    assert names == ["A scene with the bartender and the hooded figure at an unfamiliar place"]
