"""The compare page in Chromium (issue 16 item 4): one viewer in the two tavern saves, and two
viewers of one save — axe clean, nothing clipped at any width, people by name, times said as
every other page says them, and shot at 390, 1440 and 1920 px."""

from __future__ import annotations

import pytest
from axe_playwright_python.sync_playwright import Axe

from tests.browser.test_inspector_pages import CLIPPED_PANELS, CLIPPED_TABLES, ISO, SAID
from tests.helpers import TAVERN_V1, TAVERN_V2

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

V1, V2 = TAVERN_V1, TAVERN_V2
PAGES = {
    "compare-saves": f"/compare/?a={V1}&b={V2}&viewer=alice",
    "compare-viewers": f"/compare/?save={V2}&a=alice&b=charlie",
}
WIDER_THAN_THE_SCREEN = (
    "() => document.scrollingElement.scrollWidth > document.scrollingElement.clientWidth + 1"
)


@pytest.mark.parametrize("name", list(PAGES))
def test_the_compare_page_reads_well_at_every_width(
    login, page, two_eras, screenshots, name
) -> None:
    login(page, PAGES[name])
    assert page.locator("#compare-summary").count() == 1
    results = Axe().run(page)
    bad = [
        f"{v['id']} ({v['impact']}): {[n['target'] for n in v['nodes']][:3]}"
        for v in results.response["violations"]
        if v["impact"] in ("serious", "critical")
    ]
    assert bad == []
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
