"""Layout and time in Chromium (issue 28 item 7): the header stays one line at 1440 and 1920
with the live marker and a long save name; the marker only on a followed save, "stopped" once
its follower goes quiet; the save page leads with viewers and leaks, provenance folded; a
wide table says it scrolls at 390 px."""

from __future__ import annotations

import re

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from memory.models import LiveFollow
from memory.worlds.live import Follower
from memory.worlds.standin import StandIn
from tests.browser.test_inspector_pages import serious_violations

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
LONG_SAVE = "the-lighthouse-keepers-long-winter-second-attempt"


@pytest.fixture
def followed(db, tmp_path):
    stand_in = StandIn(tmp_path / "game.sqlite", seed=4, delete_every=0)
    stand_in.run(30, 0)
    follower = Follower(tmp_path / "game.sqlite", name=LONG_SAVE)
    follower.tick()
    yield stand_in, follower
    stand_in.close()
    follower.close()


def header_lines(page) -> int:
    """How many rows the header's items sit on (by their tops)."""
    tops = page.evaluate(
        """() => Array.from(document.querySelectorAll('.site-header > *'))
          .filter(e => e.offsetParent !== null).map(e => Math.round(e.getBoundingClientRect().top))"""
    )
    rows = sorted(set(tops))
    return 1 + sum(1 for a, b in zip(rows, rows[1:], strict=False) if b - a > 8)


def test_header_is_one_line_with_the_marker_on_a_followed_save(
    login, page, followed, demo, screenshots
) -> None:
    login(page, f"/saves/{LONG_SAVE}/viewers/mara/")
    marker = page.locator(".live-marker")
    expect(marker).to_be_visible()
    expect(marker.locator("[data-live-text]")).to_have_text(re.compile(r"^live · updated "))
    for width in (1440, 1920):
        page.set_viewport_size({"width": width, "height": 900})
        assert header_lines(page) == 1, width
    screenshots("header-followed")
    # The follower goes quiet: the marker says it stopped.
    LiveFollow.every_save.update(heartbeat_at=timezone.now() - timezone.timedelta(minutes=5))
    expect(marker.locator("[data-live-text]")).to_have_text(
        re.compile(r"^stopped · last update "), timeout=10_000
    )
    # A save nobody follows, and the overview, show no marker.
    page.goto("/saves/demo/viewers/npc-pip/")
    page.wait_for_timeout(500)
    expect(marker).to_be_hidden()
    page.goto("/")
    page.wait_for_timeout(500)
    expect(page.locator(".live-marker")).to_be_hidden()


def test_save_page_leads_with_viewers_and_leaks_and_tables_say_they_scroll(
    login, page, demo, screenshots
) -> None:
    login(page, "/saves/demo/")
    first_panels = page.locator("main .overview > section h2").all_inner_texts()[:2]
    assert first_panels == ["Viewers", "Open leaks per viewer"]
    details = page.locator("section.provenance details")
    assert details.get_attribute("open") is None  # folded
    assert page.locator("section.provenance summary").inner_text() == "Where this save came from"
    page.set_viewport_size({"width": 390, "height": 844})
    page.wait_for_timeout(300)
    hint = page.locator("table.matrix").locator("xpath=preceding-sibling::p[1]")
    expect(hint).to_have_text("Scroll sideways for more columns →")
    scroller = page.locator(".scroll").filter(has=page.locator("table.matrix"))
    assert scroller.get_attribute("tabindex") == "0"
    assert serious_violations(page) == []
    screenshots("save-page-layout")
    page.set_viewport_size({"width": 1920, "height": 1080})
    page.wait_for_timeout(300)
    expect(page.locator("table.matrix").locator("xpath=preceding-sibling::p")).to_have_count(0)


def test_tab_reaches_the_buffer_before_the_aliases(login, page, demo, screenshots) -> None:
    login(page, "/saves/demo/viewers/npc-pip/")
    order = page.evaluate(
        """() => Array.from(document.querySelectorAll('#viewer-panels .panels > section'))
          .map(s => s.id)"""
    )
    assert order[:2] == ["buffer-panel", "aliases-panel"]
    page.focus("#buffer-panel h2 a")
    stops = []
    for _ in range(200):
        page.keyboard.press("Tab")
        stops.append(page.evaluate("document.activeElement.closest('section')?.id || ''"))
        if stops[-1] == "aliases-panel":
            break
    assert set(stops[:-1]) == {"buffer-panel"} and stops[-1] == "aliases-panel"
    # The grid still draws the buffer on the left, the aliases on the right.
    buffer, aliases = (
        page.locator("#buffer-panel").bounding_box(),
        page.locator("#aliases-panel").bounding_box(),
    )
    assert buffer["x"] < aliases["x"] and abs(buffer["y"] - aliases["y"]) < 5
    screenshots("viewer-tab-order")


_STOP = """() => {
  const e = document.activeElement;
  if (!e.closest('#alias-npc-sable')) return '';
  return e.tagName === 'INPUT' ? 'input' : (e.textContent || '').trim();
}"""


def test_an_alias_row_at_rest_is_its_links_label_and_actions_and_the_table_skips(
    login, page, demo, screenshots
) -> None:
    # Save is offered once the label is edited (Enter then saves too): the keyboard walks a
    # row at rest without it, and past a long table in one step.
    login(page, "/saves/demo/viewers/npc-pip/")
    page.focus("#alias-npc-sable .uses-link")
    stops = ["lines"]
    for _ in range(10):
        page.keyboard.press("Tab")
        if not (stop := page.evaluate(_STOP)):
            break
        stops.append(stop)
    assert stops == ["lines", "what Pip Dunn remembers of Sable Quint", "input", "Forget", "Use"]
    page.focus("#label-npc-sable")
    page.keyboard.type(" the second")
    page.keyboard.press("Tab")
    assert page.evaluate(_STOP) == "Save"
    page.keyboard.press("Shift+Tab")
    page.keyboard.press("Enter")  # the edited label saves from its box
    expect(page.locator("#aliases-panel ol.alias-history li").first).to_contain_text("the second")
    expect(page.locator("#alias-npc-sable button[value=set]")).to_be_disabled()
    # The skip link: from the top of the table to what follows it.
    skip = page.locator("#aliases-panel .skip-link")
    skip.focus()
    expect(skip).to_be_visible()
    screenshots("alias-skip-link")
    page.keyboard.press("Enter")
    page.keyboard.press("Tab")
    assert page.evaluate(
        "!document.activeElement.closest('table.aliases') && "
        "!!document.activeElement.closest('#aliases-panel')"
    )
    assert page.console_errors == []
