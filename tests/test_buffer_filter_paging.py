"""Paging a filtered buffer: the "older" / "newer" links appear only when a further row passes
the filters, so a link never leads to an empty page (issue 15: all 13 dialogue lines shown, yet
both links appeared and led nowhere)."""

from __future__ import annotations

import pytest
from django.test import override_settings

from memory.engine.knowledge import get_viewer
from memory.selectors.buffer import buffer_page


@pytest.fixture(autouse=True)
def _no_time_budget(settings) -> None:
    """These tests hold the links' logic; the scan's time budget, which on a busy machine
    (CI runs the suites side by side) can end a scan early and rightly offer "continue", is
    held by its own tests (tests/test_user_path.py, tests/test_text_index.py)."""
    settings.OMNIA_BUFFER_SCAN_SECONDS = 60


def test_filtered_page_with_every_match_has_no_paging_links(reader_client, demo) -> None:
    r = reader_client.get("/saves/demo/viewers/npc-tobiah/buffer/?type=dialogue")
    body = r.content.decode()
    assert r.status_code == 200
    assert body.count('<li id="line-') == 13
    assert "← older" not in body and "newer →" not in body
    api = reader_client.get("/api/saves/demo/viewers/npc-tobiah/buffer?type=dialogue").json()
    assert len(api["items"]) == 13
    assert (api["older"], api["newer"]) == (None, None)


@override_settings(OMNIA_BUFFER_PAGE_SIZE=5)
def test_filtered_paging_walks_every_match_once_and_each_link_leads_somewhere(demo) -> None:
    viewer = get_viewer("npc-tobiah")
    dialogue = frozenset({"dialogue"})
    seen: list[str] = []
    page = buffer_page(viewer, types=dialogue)
    pages = [page]
    while page.older:
        page = buffer_page(viewer, types=dialogue, before=page.older)
        pages.append(page)
    for p in reversed(pages):
        seen += [e.id for e in p.entries]
    assert [len(p.entries) for p in pages] == [5, 5, 3]
    assert len(seen) == len(set(seen)) == 13
    assert pages[0].newer is None and pages[-1].older is None
    # And back up from the oldest page, by its newer link, to the newest.
    back = buffer_page(viewer, types=dialogue, after=pages[-1].newer)
    assert [e.id for e in back.entries] == [e.id for e in pages[-2].entries]
    assert back.newer is not None
    newest = buffer_page(viewer, types=dialogue, after=pages[1].newer)
    assert [e.id for e in newest.entries] == [e.id for e in pages[0].entries]
    assert newest.newer is None


def test_text_filter_paging_checks_the_filter_too(demo) -> None:
    viewer = get_viewer("npc-tobiah")
    everything = buffer_page(viewer, q="sable")
    n = len(everything.entries)
    assert n >= 3
    exact = buffer_page(viewer, q="sable", limit=n)
    assert (exact.older, exact.newer) == (None, None)
    short = buffer_page(viewer, q="sable", limit=n - 1)
    assert short.newer is None and short.older is not None
    rest = buffer_page(viewer, q="sable", limit=n - 1, before=short.older)
    assert [e.id for e in rest.entries] == [everything.entries[0].id]
    assert rest.older is None and rest.newer is not None


def test_an_unfiltered_page_knows_its_next_page_from_its_own_read(demo) -> None:
    """Unfiltered, a page reads one row past itself: a further page is known from that read
    (no second statement), at every page size around the buffer's length, in both
    directions; rows_visited counts the row read past the page."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    viewer = get_viewer("npc-tobiah")
    every = buffer_page(viewer, limit=500).entries
    total = len(every)
    for limit in (1, 5, total - 1, total, total + 1):
        with CaptureQueriesContext(connection) as newest:
            page = buffer_page(viewer, limit=limit)
        assert len(newest.captured_queries) == 1, limit
        assert [e.id for e in page.entries] == [e.id for e in every[-limit:]]
        assert (page.older is not None, page.newer) == (limit < total, None)
        assert page.rows_visited == min(limit + 1, total)
        if page.older is None:
            continue
        # The oldest page of `limit`, read forward from the start: the same rows, and its
        # link onward known from its own read too.
        first = buffer_page(viewer, limit=limit, oldest_first=True)
        assert [e.id for e in first.entries] == [e.id for e in every[:limit]]
        assert (first.older, first.newer is not None) == (None, True)


def test_the_buffer_fragment_reads_no_name_it_does_not_print(reader_client, demo) -> None:
    """The viewer's name is read when a template prints it (the page's heading, the aliases
    panel), not for the buffer fragment, which prints none; the page still names the viewer."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    hx = {"HTTP_HX_REQUEST": "true"}
    with CaptureQueriesContext(connection) as fragment:
        body = reader_client.get("/saves/demo/viewers/npc-tobiah/buffer/", **hx).content.decode()
    assert body.count('<li id="line-') > 0
    assert [q["sql"] for q in fragment.captured_queries if "attributes" in q["sql"]] == []
    page = reader_client.get("/saves/demo/viewers/npc-tobiah/").content.decode()
    assert '<h1><span class="viewer-name">Tobiah' in page
    assert "<title>Tobiah" in page
