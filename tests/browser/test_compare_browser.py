"""The compare page in Chromium (issue 16 item 4): one viewer in the two tavern saves, and two
viewers of one save — axe clean, nothing clipped at any width, people by name, times said as
every other page says them, and shot at 390, 1440 and 1920 px."""

from __future__ import annotations

import pytest

from tests.browser.test_inspector_pages import (
    CLIPPED_PANELS,
    CLIPPED_TABLES,
    ISO,
    SAID,
    WIDER_THAN_THE_SCREEN,
    serious_violations,
)
from tests.helpers import TAVERN_V1, TAVERN_V2

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

V1, V2 = TAVERN_V1, TAVERN_V2
PAGES = {
    "compare-saves": f"/compare/?a={V1}&b={V2}&viewer=alice",
    "compare-viewers": f"/compare/?save={V2}&a=alice&b=charlie",
}


@pytest.mark.parametrize("name", list(PAGES))
def test_the_compare_page_reads_well_at_every_width(
    login, page, two_eras, screenshots, name
) -> None:
    login(page, PAGES[name])
    assert page.locator("#compare-summary").count() == 1
    assert serious_violations(page) == []
    main = page.inner_text("main")
    assert "Alice" in main  # people by name
    # Times as every other page says them ("Jul 6, 9:36 AM"), never a bare ISO stamp in text.
    assert not ISO.search(main), ISO.search(main)
    if name == "compare-saves":
        assert SAID.search(main)
    screenshots(name)  # first, so a failure below has its pictures
    for width in (390, 1440, 1920):
        page.set_viewport_size({"width": width, "height": 900})
        assert page.evaluate(CLIPPED_TABLES) == [], width
        assert page.evaluate(CLIPPED_PANELS) == [], width
        assert not page.evaluate(WIDER_THAN_THE_SCREEN), width
    assert page.console_errors == []


RAW_IDS = r"entry-\d+|mem-(alice|bob)-1|ale-barrel|tavern-main|scene:|[0-9a-f]{8}-[0-9a-f]{4}-"
NOT_IN_LINES = """(pattern) => {
  const main = document.querySelector("main").cloneNode(true);
  main.querySelectorAll(".line, datalist").forEach((n) => n.remove());
  return (main.innerText.match(new RegExp(pattern, "g")) || []);
}"""


def test_compare_is_reached_from_a_viewer_page_and_reads_by_name(
    login, page, two_eras, screenshots
) -> None:
    """Issue 28 item 2: from Alice's viewer page, "Compare with… Alice in another save"
    fills the form (save A, the viewer by name, the other save as B); comparing lines up
    every moment the two eras share, with no raw id outside the game's lines until QA."""
    login(page, f"/saves/{V1}/viewers/alice/")
    page.get_by_role("link", name="Alice in another save").click()
    page.wait_for_selector("#compare-waiting")
    form = page.locator("form.compare-saves")
    assert form.locator("input[name=viewer]").input_value() == "Alice"
    assert form.locator("select[name=a]").input_value() == V1
    assert form.locator("select[name=b]").input_value() == V2
    form.get_by_role("button", name="Compare saves").click()
    page.wait_for_selector("#compare-summary")
    heading = page.locator(".compare-viewer h3").first.inner_text()
    assert heading.startswith("Memories: 5 moments in both"), heading
    assert page.evaluate(NOT_IN_LINES, RAW_IDS) == []
    assert serious_violations(page) == []
    screenshots("compare-from-viewer")
    for width in (390, 1440, 1920):
        page.set_viewport_size({"width": width, "height": 900})
        assert page.evaluate(CLIPPED_PANELS) == [], width
        assert not page.evaluate(WIDER_THAN_THE_SCREEN), width
    # QA on: the ids are there, beside the names.
    page.get_by_role("link", name="QA: off").click()
    page.wait_for_selector("a.qa-toggle[data-state=on]")
    assert page.evaluate(NOT_IN_LINES, RAW_IDS) != []
    assert page.console_errors == []


def test_two_viewers_by_name_from_the_viewer_page(login, page, two_eras, screenshots) -> None:
    login(page, f"/saves/{V2}/viewers/alice/")
    page.get_by_role("link", name="another viewer in this save").click()
    page.wait_for_selector("#compare-waiting")
    form = page.locator("form.compare-viewers")
    assert form.locator("input[name=a]").input_value() == "Alice"
    form.locator("input[name=b]").fill("gareth")
    form.get_by_role("button", name="Compare viewers").click()
    page.wait_for_selector("#compare-summary")
    assert "what Alice knows that Gareth doesn’t" in page.inner_text("#compare-summary")
    assert page.evaluate(NOT_IN_LINES, RAW_IDS) == []
    screenshots("compare-two-viewers")
    assert page.console_errors == []
