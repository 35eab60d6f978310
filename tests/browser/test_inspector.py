from __future__ import annotations

import re

import pytest

from memory.engine.write_door import remember
from tests.helpers import CHEST_LINE

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _action(description: str, actor: str) -> dict:
    return {
        "type": "action",
        "originalText": description,
        "description": description,
        "actorId": actor,
        "targetIds": [],
    }


@pytest.fixture
def story_with_a_script(chest):
    """alice saw bob open the chest, then write a script on the wall; bob waved at the room."""
    remember(
        "alice", _action("<script>alert(1)</script>", "bob"), timestamp="2026-07-06T12:04:00.000Z"
    )
    remember("bob", _action("waved at the room", "charlie"), timestamp="2026-07-06T12:05:00.000Z")
    return chest


def test_login_and_read_a_rendered_buffer_line(
    login, page, story_with_a_script, screenshots
) -> None:
    login(page, "/")
    screenshots("overview")
    page.goto("/saves/cast/viewers/alice/")
    page.wait_for_selector(f"text={CHEST_LINE}")
    screenshots("viewer")
    assert page.console_errors == []


def test_switch_viewer_without_reload_and_back(login, page, story_with_a_script) -> None:
    login(page, "/")
    page.goto("/saves/cast/viewers/alice/")
    page.evaluate("window.__noReload = 'still here'")
    page.click("nav.viewer-switch >> text=bob")
    page.wait_for_url(re.compile(r"/saves/cast/viewers/bob/$"))
    page.wait_for_selector("#viewer-panels[data-viewer=bob]")
    assert page.evaluate("window.__noReload") == "still here"  # swapped by htmx, not reloaded
    for panel in ("aliases-panel", "buffer-panel", "sessions-panel", "faces-panel"):
        assert page.locator(f"#{panel}").count() == 1
    assert page.locator("#label-alice").input_value() == "the traveller"
    assert "[12:05:00 PM] an unfamiliar figure waved at the room" in page.inner_text(
        "#buffer-panel"
    )
    page.go_back()
    page.wait_for_url(re.compile(r"/saves/cast/viewers/alice/$"))
    page.wait_for_selector("#viewer-panels[data-viewer=alice]")
    assert CHEST_LINE in page.inner_text("#buffer-panel")
    assert page.console_errors == []


def test_qa_toggle_reveals_ids(login, page, story_with_a_script) -> None:
    login(page, "/")
    page.goto("/saves/cast/viewers/alice/")
    assert page.locator(".qa-ids").count() == 0
    page.click("a.qa-toggle")
    page.wait_for_url(re.compile(r"/saves/cast/viewers/alice/buffer/\?qa=1$"))
    page.wait_for_selector(".qa-ids")
    assert story_with_a_script.id in page.inner_text("#buffer-panel")
    assert page.console_errors == []


def test_inline_alias_edit_shows_at_once_in_buffer_and_history(
    login, page, story_with_a_script, screenshots
) -> None:
    login(page, "/")
    page.goto("/saves/cast/viewers/alice/")
    page.fill("#label-bob", "Gareth")
    page.click("#alias-bob button[value=set]")
    page.wait_for_selector("text=[12:03:00 PM] Gareth opened the wooden chest (Outcome: Succeeded)")
    assert "“the hooded figure” → “Gareth”" in page.inner_text("#aliases-panel")
    screenshots("viewer-after-alias-edit")
    page.goto("/saves/cast/")
    assert page.inner_text("td[data-viewer=alice][data-target=bob]") == "Gareth"
    # refused input is shown inline and changes nothing
    page.goto("/saves/cast/viewers/alice/")
    page.fill("#label-bob", "charlie")
    page.click("#alias-bob button[value=set]")
    page.wait_for_selector("#aliases-panel .error")
    assert "is a system id" in page.inner_text("#aliases-panel")
    assert page.console_errors == []


def test_script_in_memory_shows_as_text_and_never_runs(login, page, story_with_a_script) -> None:
    login(page, "/")
    page.goto("/saves/cast/viewers/alice/?qa=1")
    page.wait_for_selector("text=the hooded figure <script>alert(1)</script>")
    page.goto("/saves/cast/viewers/alice/buffer/?qa=1")
    page.wait_for_selector("text=the hooded figure <script>alert(1)</script>")
    assert page.dialogs == []
    assert page.console_errors == []


def test_keyboard_navigation(login, page, story_with_a_script) -> None:
    login(page, "/")
    page.goto("/saves/cast/viewers/alice/")
    page.keyboard.press("j")
    assert page.evaluate("document.activeElement.classList.contains('buffer-line')")
    page.keyboard.press("?")
    assert page.is_visible("#help")
    page.keyboard.press("Escape")
    page.keyboard.press("/")
    assert page.evaluate("document.activeElement.id") == "viewer-search"


def test_a_crowded_world_pages_and_filters_its_knowledge_matrix(
    login, page, story_with_a_script, screenshots
) -> None:
    import json

    from memory.models import Attribute, WorldObject

    for n in range(60):
        WorldObject.objects.create(
            id=f"sailor-{n:02d}",
            type="entity",
            world_id="tavern",
            aliases_json=json.dumps([["alice", "Alice"]] if n == 7 else []),
        )
        Attribute.objects.create(
            object_id=f"sailor-{n:02d}", name="name", value=f"Sailor {n}", visibility="PUBLIC"
        )
    login(page, "/")
    page.goto("/saves/cast/")  # the matrix is drawn on its save's page
    assert page.inner_text(".matrix-nav").startswith("Viewers 1–25 of 63")
    screenshots("overview-crowd")
    page.click("text=later viewers →")
    page.wait_for_url(re.compile(r"/saves/cast/\?.*mr=25"))
    assert page.inner_text(".matrix-nav").startswith("Viewers 26–50 of 63")
    page.fill("input[name=mrq]", "sailor 7")
    page.fill("input[name=mcq]", "alice")
    page.click(".matrix-filter button[type=submit]")
    page.wait_for_url(re.compile(r"/saves/cast/\?.*mrq=sailor"))
    cell = page.locator('td[data-viewer="sailor-07"][data-target="alice"]')
    assert cell.inner_text() == "Alice"
    assert cell.get_attribute("class") == "state-known"
    screenshots("overview-crowd-filtered")
    assert page.console_errors == []


def test_a_viewer_who_knows_a_crowd_pages_its_labels(
    login, page, story_with_a_script, screenshots
) -> None:
    """120 sailors, alice knowing 60 of them: her aliases come 25 labels at a time with the
    first strangers; the pager swaps the panel in place, and an edit on a later page stays
    on it."""
    import json

    from memory.models import Attribute, WorldObject

    labels = [["bob", "the hooded figure"], ["charlie", "the bartender"]]
    for n in range(120):
        WorldObject.objects.create(
            id=f"sailor-{n:03d}", type="entity", world_id="tavern", aliases_json="[]"
        )
        Attribute.objects.create(
            object_id=f"sailor-{n:03d}",
            name="appearance",
            value=f"a sailor with a {'red' if n % 2 else 'grey'} cap",
            visibility="PUBLIC",
        )
        if n % 2 == 0:
            labels.append([f"sailor-{n:03d}", f"the deckhand {n}"])
    WorldObject.objects.filter(id="alice").update(aliases_json=json.dumps(labels))
    login(page, "/")
    page.goto("/saves/cast/viewers/alice/")
    pager = page.locator("#aliases-panel .alias-pager")
    assert pager.inner_text() == "Labels 1–25 of 62 · later labels →"
    labelled = page.locator("#aliases-panel input[name=label]:not([value=''])")
    assert labelled.count() == 25
    page.evaluate("window.__noReload = 'still here'")
    page.click("#aliases-panel >> text=later labels →")
    page.wait_for_url(re.compile(r"/saves/cast/viewers/alice/aliases/\?aliases_from=25$"))
    page.wait_for_selector("text=Labels 26–50 of 62")
    assert page.evaluate("window.__noReload") == "still here"
    assert page.locator("#label-sailor-046").input_value() == "the deckhand 46"
    page.fill("#label-sailor-046", "the cook")
    page.click("#alias-sailor-046 button[value=set]")
    page.wait_for_selector("#alias-sailor-046 input[value='the cook']")
    assert pager.inner_text() == "Labels 26–50 of 62 · ← earlier labels · later labels →"
    assert page.console_errors == []
    # Shot last: a full-page screenshot leaves style="" on inputs, which an htmx swap after
    # it copies (a CSP report the page itself never causes).
    screenshots("viewer-aliases-page-2")
    page.goto("/saves/cast/viewers/alice/")
    screenshots("viewer-aliases-paged")
