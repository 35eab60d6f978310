"""The event page in Chromium (issue 27 item 2): one moment of the v1 tavern, seen by alice,
bob and charlie — reached from a buffer line's "seen by 3", axe clean, nothing clipped at 390,
1440 or 1920 px, shot at each; its links lead to each witness's line and back."""

from __future__ import annotations

import re

import pytest

from tests.browser.test_inspector_pages import (
    CLIPPED_PANELS,
    CLIPPED_TABLES,
    ISO,
    SAID,
    WIDER_THAN_THE_SCREEN,
    serious_violations,
)
from tests.helpers import TAVERN_V1

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


# The labels table fits its panel at every width (its scroll region is for wider casts).
LABELS_SCROLL = (
    "() => { const r = document.querySelector('.table-scroll'); "
    "return r.scrollWidth > r.clientWidth + 1; }"
)


def test_the_event_page_reads_well_at_every_width_and_leads_back(
    login, page, two_eras, screenshots
) -> None:
    viewer = f"/saves/{TAVERN_V1}/viewers/alice/"
    login(page, viewer)
    first = page.locator(".buffer-line").first
    assert first.locator(".seen-by").inner_text().startswith("seen by 3")
    screenshots("viewer-seen-by")
    first.locator(".seen-by").click()
    page.wait_for_url(re.compile(r"/events/"))
    event_url = page.url
    assert page.locator(".witness").count() == 3
    main = page.inner_text("main")
    for name in ("Alice", "Bob", "Charlie"):
        assert name in main  # people by name
    assert SAID.search(main) and not ISO.search(main)
    # alice's line names people she has no name for: the leak shows in her column.
    alice = page.locator('.witness[data-viewer-id="alice"]')
    assert alice.locator(".leak-text mark").count() >= 1
    assert serious_violations(page) == []
    screenshots("event")
    for width in (390, 1440, 1920):
        page.set_viewport_size({"width": width, "height": 900})
        assert page.evaluate(CLIPPED_TABLES) == [], width
        assert page.evaluate(CLIPPED_PANELS) == [], width
        assert not page.evaluate(WIDER_THAN_THE_SCREEN), width
        assert page.evaluate(LABELS_SCROLL) is False, width
    # A witness's link opens its buffer with that line selected; back returns to the event.
    charlie = page.locator('.witness[data-viewer-id="charlie"]')
    entry_id = charlie.get_attribute("data-entry-id")
    charlie.locator(".line-link").click()
    page.wait_for_url(re.compile(r"/viewers/charlie/"))
    selected = page.locator(f'.buffer-line[data-entry-id="{entry_id}"]')
    assert selected.get_attribute("aria-current") == "true"
    assert selected.is_visible()
    page.go_back()
    page.wait_for_url(event_url)
    assert page.locator(".witness").count() == 3
    page.go_back()
    page.wait_for_url(re.compile(r"/viewers/alice/$"))
    assert page.console_errors == []


def test_the_search_page_reads_well_and_leads_to_events(login, page, two_eras, screenshots) -> None:
    login(page, f"/saves/{TAVERN_V1}/viewers/alice/")
    # The header's box on every save page.
    page.fill("#save-search", "gareth")
    page.press("#save-search", "Enter")
    page.wait_for_url(re.compile(r"/search/\?q=gareth"))
    found = page.locator(".found-event")
    assert found.count() >= 2
    assert page.locator(".found-witnesses li.matched").first.inner_text().count("Gareth")
    main = page.inner_text("main")
    assert SAID.search(main) and not ISO.search(main)
    assert serious_violations(page) == []
    screenshots("search")
    for width in (390, 1440, 1920):
        page.set_viewport_size({"width": width, "height": 900})
        assert page.evaluate(CLIPPED_PANELS) == [], width
        assert not page.evaluate(WIDER_THAN_THE_SCREEN), width
    search_url = page.url
    found.first.locator("h3 a").click()
    page.wait_for_url(re.compile(r"/events/"))
    assert page.locator(".witness").count() >= 1
    page.go_back()
    page.wait_for_url(search_url)
    assert page.console_errors == []
