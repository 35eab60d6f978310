"""The demo world in Chromium: four panels swap together, the prompt page marks its leak."""

from __future__ import annotations

import re

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PANELS = ("aliases-panel", "buffer-panel", "sessions-panel", "faces-panel")


def panels(page) -> dict[str, str]:
    return {p: page.locator(f"#{p}").inner_text() for p in PANELS}


def test_picking_a_viewer_swaps_all_four_panels_and_back_restores(
    login, page, demo, screenshots
) -> None:
    login(page, "/saves/demo/")
    screenshots("overview-demo")
    page.goto("/saves/demo/viewers/npc-pip/")
    page.evaluate("window.__noReload = 'still here'")
    pip = panels(page)
    page.click("nav.viewer-switch >> text=npc-tobiah")
    page.wait_for_url(re.compile(r"/saves/demo/viewers/npc-tobiah/$"))
    page.wait_for_selector("#viewer-panels[data-viewer=npc-tobiah]")
    assert page.evaluate("window.__noReload") == "still here"  # htmx swapped, nothing reloaded
    tobiah = panels(page)
    assert [p for p in PANELS if tobiah[p] == pip[p]] == []  # every panel changed
    assert "Signal Nights" in tobiah["faces-panel"] and "Signal Nights" not in pip["faces-panel"]
    assert page.locator("#faces-panel [data-entry-id=abs-tobiah-signal-nights]").count() == 1
    page.go_back()
    page.wait_for_url(re.compile(r"/saves/demo/viewers/npc-pip/$"))
    page.wait_for_selector("#viewer-panels[data-viewer=npc-pip]")
    assert panels(page) == pip
    assert page.console_errors == []
    page.go_forward()
    page.wait_for_selector("#viewer-panels[data-viewer=npc-tobiah]")
    screenshots("viewer-demo")


def test_faces_toggle_is_a_permalink(login, page, demo) -> None:
    login(page, "/saves/demo/")
    page.goto("/saves/demo/viewers/npc-tobiah/")
    page.evaluate("window.__noReload = 1")
    page.click("#faces-panel a.shadowed-toggle")
    page.wait_for_url(re.compile(r"/saves/demo/viewers/npc-tobiah/faces/\?include_shadowed=1$"))
    page.wait_for_selector("#faces-panel .shadowed-under .face-shadowed")
    assert page.evaluate("window.__noReload") == 1
    text = page.locator("#faces-panel").inner_text()
    assert "Your own note “The Gullwing” replaces the Smugglers' lore (faction) entry" in text
    assert "Rolled up into “Signal Nights”" in text
    page.reload()  # the permalink renders the same state without JS state
    assert page.locator("#faces-panel .shadowed-under .face-shadowed").count() == 1
    assert page.console_errors == []


def test_prompt_page_highlights_the_planted_leak_and_copies(login, page, demo, screenshots) -> None:
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    login(page, "/saves/demo/")
    page.goto("/saves/demo/viewers/npc-pip/prompt/")
    mark = page.locator("#prompt-text mark.leak")
    assert mark.count() == 1
    assert mark.inner_text() == "Sable Quint"
    mark.focus()
    assert page.evaluate("document.activeElement.tagName") == "MARK"
    described = page.evaluate(
        "document.getElementById(document.activeElement.getAttribute('aria-describedby'))"
        ".textContent"
    )
    assert "Pip Dunn knows Sable Quint only as 'the tall one in grey'" in described
    tooltip = page.evaluate(
        "getComputedStyle(document.activeElement, '::after').getPropertyValue('content')"
    )
    assert "the tall one in grey" in tooltip  # the explanation shows on focus, not only hover
    screenshots("prompt-demo")
    page.click("button.copy-button")
    page.wait_for_selector(".copy-status:has-text('Copied.')")
    copied = page.evaluate("navigator.clipboard.readText()")
    assert copied == page.locator("#prompt-text").text_content()
    assert "Sable Quint" in copied and copied.startswith("## Current moment")
    assert page.console_errors == []


def test_projection_buttons_answer_in_place(login, page, demo) -> None:
    login(page, "/saves/demo/")
    page.evaluate("window.__noReload = 1")
    page.click("#projection-panel >> text=Verify a rebuild")
    page.wait_for_selector("#projection-panel .result")
    assert re.fullmatch(
        r"Verify: (\d+) of \1 sessions identical to a rebuild\.",
        page.locator("#projection-panel .result").inner_text(),
    )
    page.click("#projection-panel >> text=Run a cycle")
    page.wait_for_selector("#projection-panel .result:has-text('Cycle done')")
    assert page.evaluate("window.__noReload") == 1
    assert page.console_errors == []


def test_leaks_and_entry_pages_render_what_they_name(login, page, demo, screenshots) -> None:
    login(page, "/saves/demo/")
    page.goto("/saves/demo/leaks/")
    title = page.locator("#leak-title").inner_text()
    assert re.fullmatch(r"[1-9]\d* findings?", title), title
    assert "Sable Quint" in page.locator("#leak-table").inner_text()
    screenshots("leaks-demo")
    page.goto("/saves/demo/viewers/npc-tobiah/entries/ltm-tobiah-01/")
    assert page.locator("h1").inner_text() == "The Signal ltm-tobiah-01"
    screenshots("entry-longterm-demo")
    page.goto("/saves/demo/viewers/npc-tobiah/entries/m-b11-tobiah/")
    assert page.locator("h1").inner_text() == "A memory of Tobiah Crane m-b11-tobiah"
    screenshots("entry-demo")
    assert page.console_errors == []
