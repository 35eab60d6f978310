"""The buffer panel's two readings (issue 30): omnia's line as the NPC's prompt received it,
its flaws marked, and a toggle to the corrected line that outlives the panel's re-reads."""

from __future__ import annotations

import pytest

from memory.engine.write_door import remember
from tests.helpers import at

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

OMNIA_TAG = "The bartender points at entity@the hooded figure[the man]"
CORRECTED_TAG = "The bartender points at the hooded figure"
OMNIA_HER = "The hooded figure bow to my"
CORRECTED_HER = "The hooded figure bows to me"


@pytest.fixture
def flawed_lines(cast):
    """alice's buffer: a nested tag omnia leaves half-hydrated, and an object "her" omnia
    reads to her as "my"."""
    for minute, content, actor in (
        (1, "entity@charlie[I] point at entity@entity@bob[bob][the man]", "charlie"),
        (2, "entity@bob[I] bow to entity@alice[her]", "bob"),
    ):
        remember(
            "alice",
            {"type": "monologue", "content": content, "actorId": actor, "targetIds": []}
            | {"modifiers": []},
            timestamp=at(minute),
        )


def test_the_reading_toggle_swaps_omnias_lines_for_the_corrected_ones(
    login, page, flawed_lines, screenshots
) -> None:
    login(page, "/saves/cast/viewers/alice/")
    toggle = page.locator("[data-reading-toggle]")
    omnia = page.locator(".line-omnia")
    corrected = page.locator(".line-corrected")
    assert omnia.all_inner_texts() == [OMNIA_TAG, OMNIA_HER]
    assert [c.is_visible() for c in corrected.all()] == [False, False]
    assert page.locator("mark.flaw").all_inner_texts() == [
        "entity@the hooded figure[the man]",
        "bow",
        "my",
    ]
    assert toggle.get_attribute("aria-pressed") == "false"

    toggle.click()
    assert toggle.get_attribute("aria-pressed") == "true"
    assert toggle.inner_text() == "Lines: corrected"
    assert [o.is_visible() for o in omnia.all()] == [False, False]
    assert corrected.all_inner_texts() == [CORRECTED_TAG, CORRECTED_HER]

    # The QA toggle re-reads the panel through htmx: the reading chosen stays.
    page.click(".qa-toggle")
    page.wait_for_selector(".qa-ids")
    assert page.locator("[data-reading-toggle]").get_attribute("aria-pressed") == "true"
    assert page.locator(".line-corrected").all_inner_texts() == [CORRECTED_TAG, CORRECTED_HER]

    page.locator("[data-reading-toggle]").click()
    assert page.locator(".line-omnia").all_inner_texts() == [OMNIA_TAG, OMNIA_HER]
    # Shot last: a full-page screenshot leaves style="" on inputs, which an htmx swap after
    # it would re-apply against the CSP.
    screenshots("buffer-reading-omnia")
    page.locator("[data-reading-toggle]").click()
    screenshots("buffer-reading-corrected")
    assert page.console_errors == []


def test_the_prompt_page_marks_omnias_raw_tag_and_its_grammar(
    login, page, flawed_lines, screenshots
) -> None:
    login(page, "/saves/cast/viewers/alice/prompt/")
    assert page.locator("mark.leak-raw_tag").all_inner_texts() == [
        "entity@the hooded figure[the man]"
    ]
    assert page.locator("ul.flaws mark.flaw").all_inner_texts() == ["bow", "my"]
    screenshots("prompt-omnia-flaws")
    assert page.console_errors == []
