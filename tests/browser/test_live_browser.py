"""Live pages in a browser: with a page open, what the game stand-in writes (followed by the
same Follower `follow_omnia` runs) appears without a reload — a new buffer line on the viewer
page, a planted leak on the leak page (marked new and announced) — and Pause stops it."""

from __future__ import annotations

import re
import sqlite3

import pytest
from playwright.sync_api import expect

from memory.worlds.live import Follower
from memory.worlds.standin import StandIn

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
POLL_MS = 2000  # static/memory/js/live.js polls /live/ this often


@pytest.fixture
def game(db, tmp_path):
    stand_in = StandIn(tmp_path / "game.sqlite", seed=4, delete_every=0)
    stand_in.run(30, 0)
    follower = Follower(tmp_path / "game.sqlite", name="browser")
    follower.tick()
    yield stand_in, follower
    stand_in.close()
    follower.close()


def test_a_new_row_and_a_new_leak_appear_without_a_reload(login, page, game, screenshots):
    stand_in, follower = game
    # The page's own clock, which Playwright can move on: Pause is proven by polls not made.
    page.clock.install()
    login(page, "/saves/browser/viewers/mara/")
    marker = page.locator(".live-marker")
    expect(marker).to_be_visible()
    expect(marker.locator("[data-live-text]")).to_have_text(
        re.compile(r"^live · updated \d+ s ago$")
    )
    page.evaluate("window.__sameDocument = true")  # gone if the page reloads
    lines_before = page.locator("#buffer-panel li.buffer-line").count()

    stand_in.turn(actor="mara", content='entity@mara[I] say "The tide turns at nine"')
    follower.tick()
    new_line = page.locator("#buffer-panel li.buffer-line.live-new")
    expect(new_line).to_have_count(1, timeout=10_000)
    expect(new_line).to_contain_text("The tide turns at nine")
    # In place: the newest line, last of the page (oldest first).
    expect(page.locator("#buffer-panel li.buffer-line").last).to_contain_text("The tide turns")
    assert page.locator("#buffer-panel li.buffer-line").count() == lines_before + 1
    assert page.evaluate("window.__sameDocument") is True

    page.goto("/saves/browser/leaks/")
    page.evaluate("window.__sameDocument = true")
    expect(page.locator("#leak-table tr.leak-row")).to_have_count(0)
    stand_in.plant_leak(viewer="mara", named="tobin")
    follower.tick()
    # One row per witness of the line: each one that does not know Tobin's name leaks it.
    with sqlite3.connect(stand_in.path) as conn:
        witnesses = [r[0] for r in conn.execute(
            "SELECT owner_id FROM buffer_entries WHERE intent_json LIKE '%Tobin Reed%' "
            "AND owner_id != 'tobin' ORDER BY rowid")]  # fmt: skip
    leak = page.locator("#leak-table tr.leak-row.live-new")
    expect(leak).to_have_count(len(witnesses), timeout=10_000)
    expect(leak.locator("mark").first).to_have_text("Tobin Reed")
    expect(page.locator("#leak-table tr.leak-row.live-new[data-viewer=mara]")).to_have_count(1)
    expect(page.locator("[data-live-announce]")).to_contain_text("Tobin Reed (mara)")
    assert page.evaluate("window.__sameDocument") is True

    # Paused: the marker says so and a new leak waits until Resume.
    shown = page.locator("#leak-table tr.leak-row").count()
    page.click("[data-live-pause]")
    expect(marker.locator("[data-live-text]")).to_have_text(re.compile(r"^paused · "))
    stand_in.plant_leak(viewer="mara", named="ilse")
    follower.tick()
    page.clock.run_for(3 * POLL_MS)  # three polls' time on the page's clock: none is made
    expect(page.locator("#leak-table tr.leak-row")).to_have_count(shown)
    page.click("[data-live-pause]")
    expect(
        page.locator("#leak-table tr.leak-row mark", has_text="Ilse Brandt").first
    ).to_be_visible(timeout=10_000)
    assert page.console_errors == [] and page.dialogs == []
    screenshots("live-leaks")  # last: a screenshot leaves styles behind that a swap trips on
