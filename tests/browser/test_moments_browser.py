"""A pair over time and the prompt at a moment in Chromium (issue 27 items 5 and 6), on the
v1 tavern: reached from the pages a person is on, axe clean, nothing clipped at 390, 1440 or
1920 px, shot at each; the moment control keeps the address a permalink and the back button
working."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.browser.test_inspector_pages import (
    CLIPPED_PANELS,
    ISO,
    SAID,
    WIDER_THAN_THE_SCREEN,
    serious_violations,
)
from tests.helpers import TAVERN_V1

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _fits_every_width(page) -> None:
    for width in (390, 1440, 1920):
        page.set_viewport_size({"width": width, "height": 900})
        assert page.evaluate(CLIPPED_PANELS) == [], width
        assert not page.evaluate(WIDER_THAN_THE_SCREEN), width


def test_the_pair_page_is_reached_from_an_alias_row(login, page, two_eras, screenshots) -> None:
    viewer = f"/saves/{TAVERN_V1}/viewers/alice/"
    login(page, viewer)
    link = page.locator("#aliases-panel .pair-link", has_text="what Alice remembers of Gareth")
    link.click()
    page.wait_for_url(re.compile(r"/viewers/alice/remembers/bob/$"))
    assert page.locator("h1").inner_text() == "What Alice remembers of Gareth bob"
    assert page.locator(".pair-steps").inner_text() == "called the hooded figure"
    assert page.locator(".pair-item").count() == 4
    main = page.inner_text("main")
    assert SAID.search(main) and not ISO.search(main)
    assert "holds only the aliases it ended with" in main
    assert serious_violations(page) == []
    screenshots("pair")
    _fits_every_width(page)
    page.locator(".pair-item .line-time").first.click()
    page.wait_for_url(re.compile(r"/events/"))
    assert page.locator(".witness").count() == 3
    page.go_back()
    page.wait_for_url(re.compile(r"/remembers/bob/$"))
    assert page.locator(".pair-item").count() == 4
    assert page.console_errors == []


def test_the_prompt_at_a_moment_keeps_a_permalink(login, page, two_eras, screenshots) -> None:
    prompt = f"/saves/{TAVERN_V1}/viewers/alice/prompt/"
    login(page, prompt)
    assert "would receive now" in page.locator("#prompt-title").inner_text()
    page.fill("#prompt-at", "2026-07-06T12:05:00Z")
    page.locator(".moment-form button").click()
    page.wait_for_url(re.compile(r"/prompt/\?at=2026-07-06T12%3A05%3A00Z$"))
    title = page.locator("#prompt-title").inner_text()
    assert title.startswith("What Alice’s LLM call would receive at Jul 6, 12:05 PM")
    text = page.locator("#prompt-text").inner_text()
    assert "It is 12:05 PM on Monday, July 6, 2026." in text
    assert "[12:08:00 PM]" not in text
    first = page.locator(".first-seen").first.inner_text()
    assert first.startswith("first in the prompt at Jul 6, 12:00 PM, from “[12:00:00 PM]")
    # Back to the prompt of now, and forward to the moment again: the address is the page.
    page.go_back()
    page.wait_for_url(re.compile(r"/prompt/$"))
    # htmx puts the page of before back from its history after the address moves.
    expect(page.locator("#prompt-title")).to_contain_text("would receive now")
    page.go_forward()
    page.wait_for_url(re.compile(r"/prompt/\?at="))
    expect(page.locator("#prompt-title")).to_contain_text("at Jul 6, 12:05 PM")
    assert page.console_errors == []
    assert serious_violations(page) == []
    screenshots("prompt-at")
    _fits_every_width(page)
