"""htmx at the edges, in Chromium (issue 15 items 5, 7, 8, 9): busy state, errors in their
panel with Retry, an expired session lands on the login page, the title follows the viewer,
focus returns to the edited row, a refused label stays in its input, Forget asks first, undo
from history, "use" the suggestion; faces explained in place; the entry and admin pages."""

from __future__ import annotations

import json
import re

import pytest
from django.contrib.sessions.models import Session
from playwright.sync_api import expect

from memory.models import AliasChange, WorldObject
from tests.helpers import DESIGNER_PASSWORD

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def label_of(viewer: str, target: str) -> str | None:
    return dict(json.loads(WorldObject.objects.get(id=viewer).aliases_json)).get(target)


def test_expired_session_during_a_swap_lands_on_the_login_page(
    login, page, demo, screenshots
) -> None:
    login(page, "/saves/demo/viewers/npc-pip/")
    Session.objects.all().delete()  # the session expires while the page is open
    page.click("#faces-panel a.shadowed-toggle")
    page.wait_for_url(re.compile(r"/accounts/login/\?next=%2Fsaves%2Fdemo%2Fviewers%2Fnpc-pip%2F$"))
    assert page.locator("header.site-header").count() == 1
    assert page.locator("#faces-panel").count() == 0  # a whole page, not a panel's insides
    # Signing in again goes back to the page the person was on.
    page.fill("#id_username", "designer")
    page.fill("#id_password", DESIGNER_PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(re.compile(r"/saves/demo/viewers/npc-pip/$"))
    assert page.console_errors == []


def test_a_failing_request_shows_its_error_in_the_panel_with_retry(
    login, page, demo, screenshots
) -> None:
    login(page, "/saves/demo/viewers/npc-tobiah/")
    failures = []

    def fail_once(route) -> None:
        if not failures:
            failures.append(route.request.url)
            route.fulfill(status=500, content_type="text/plain", body="boom")
        else:
            route.continue_()

    page.route(re.compile(r"/saves/demo/viewers/npc-tobiah/faces/\?include_shadowed=1$"), fail_once)
    page.click("#faces-panel a.shadowed-toggle")
    error = page.locator("#faces-panel .htmx-error[role=alert]")
    error.wait_for()
    assert error.inner_text().startswith("That request failed (500")
    assert ": boom." in error.inner_text()
    assert page.locator("#faces-panel").get_attribute("aria-busy") is None
    screenshots("htmx-error-in-panel")
    assert page.evaluate("document.activeElement.textContent") == "Retry"
    page.click("#faces-panel .htmx-error button")
    page.wait_for_selector("#faces-panel [data-entry-id=lore-gullwing]")
    assert page.locator(".htmx-error").count() == 0
    assert len(failures) == 1
    assert page.url.endswith("/saves/demo/viewers/npc-tobiah/faces/?include_shadowed=1")


def test_every_request_shows_busy_and_the_title_follows_the_viewer(login, page, demo) -> None:
    login(page, "/saves/demo/viewers/npc-pip/")
    assert page.title() == "Pip Dunn — Omnia Memory Inspector"
    page.evaluate(
        """() => { window.__busy = [];
        new MutationObserver(ms => ms.forEach(m => { if (m.target.getAttribute('aria-busy') === 'true')
          window.__busy.push(m.target.id || m.target.tagName); }))
        .observe(document.body, {subtree: true, attributes: true, attributeFilter: ['aria-busy']}); }"""
    )
    page.click("nav.viewer-switch >> text=npc-tobiah")
    page.wait_for_selector("#viewer-panels[data-viewer=npc-tobiah]")
    assert page.title() == "Tobiah Crane — Omnia Memory Inspector"
    assert page.evaluate("window.__busy") == ["main"]
    assert page.locator("[aria-busy=true]").count() == 0
    page.go_back()
    page.wait_for_selector("#viewer-panels[data-viewer=npc-pip]")
    assert page.title() == "Pip Dunn — Omnia Memory Inspector"


def test_refused_label_stays_in_the_input_and_focus_returns_to_the_row(
    login, page, demo, screenshots
) -> None:
    login(page, "/saves/demo/viewers/npc-pip/")
    before = label_of("npc-pip", "npc-sable")
    field = "#label-npc-sable"
    page.fill(field, "npc-tobiah")  # a system id: refused
    page.click("#alias-npc-sable button[value=set]")
    page.wait_for_selector("#alias-err-npc-sable")
    assert page.input_value(field) == "npc-tobiah"
    assert "is a system id" in page.inner_text("#alias-err-npc-sable")
    expect(page.locator(field)).to_be_focused()
    assert label_of("npc-pip", "npc-sable") == before
    screenshots("alias-refused")
    page.fill(field, "the woman in grey")
    page.click("#alias-npc-sable button[value=set]")
    page.wait_for_selector("#alias-err-npc-sable", state="detached")
    expect(page.locator(field)).to_be_focused()
    assert label_of("npc-pip", "npc-sable") == "the woman in grey"
    assert page.input_value(field) == "the woman in grey"


def test_forget_asks_first_and_undo_brings_the_label_back(login, page, context, demo) -> None:
    login(page, "/saves/demo/viewers/npc-pip/")
    before = label_of("npc-pip", "npc-sable")
    assert before is not None
    # The page fixture dismisses dialogs: Forget asked, and nothing was forgotten (a dismissed
    # confirm sends nothing; one turn of the page's event loop later, no request went out).
    sent = []
    page.on(
        "request", lambda request: sent.append(request.url) if "/aliases/" in request.url else None
    )
    with page.expect_event("dialog"):
        page.click("#alias-npc-sable button[value=delete]")
    page.evaluate("() => new Promise((done) => setTimeout(done, 0))")
    assert sent == []
    assert page.dialogs == [
        f"Forget the label “{before}” that Pip Dunn uses for Sable Quint? Lines about them will "
        "use a description again."
    ]
    assert label_of("npc-pip", "npc-sable") == before
    # Accepted (in a page of the same session that says yes), it forgets; undo restores.
    page = context.new_page()
    asked = []
    page.on("dialog", lambda d: (asked.append(d.message), d.accept()))
    page.goto("/saves/demo/viewers/npc-pip/")
    page.click("#alias-npc-sable button[value=delete]")
    page.wait_for_selector("#alias-npc-sable button[value=delete]", state="detached")
    assert label_of("npc-pip", "npc-sable") is None
    assert len(asked) == 1
    expect(page.locator("#label-npc-sable")).to_be_focused()
    page.click(f"#aliases-panel .alias-undo button:has-text('Undo: back to “{before}”')")
    page.wait_for_selector("#alias-npc-sable button[value=delete]")
    assert label_of("npc-pip", "npc-sable") == before
    assert page.input_value("#label-npc-sable") == before
    assert AliasChange.objects.order_by("-id").first().source == "inspector undo"


def test_use_suggestion_in_one_click(login, page, demo) -> None:
    login(page, "/saves/demo/viewers/npc-pip/")
    row = page.locator("#aliases-panel tr", has=page.locator(".alias-suggest")).first
    target = row.get_attribute("data-target")
    suggestion = row.locator(".alias-suggest button").get_attribute("aria-label")
    row.locator(".alias-suggest button").click()
    expect(page.locator(f'#aliases-panel tr[data-target="{target}"] .alias-suggest')).to_have_count(
        0
    )
    label = label_of("npc-pip", target)
    # Named in words (the true name), not by the id.
    assert target == "5b0e6c1a-3f2d-4e8b-9a71-c4d2e8f90a13"
    assert suggestion == f"Use “{label}” as the label for Isolde Varga"


def test_faces_explained_in_place_and_entry_pages(login, page, demo, screenshots) -> None:
    login(page, "/saves/demo/viewers/npc-oswin/faces/?include_shadowed=1")
    carrier = page.locator("#faces-panel li[data-entry-id=ltm-oswin-01]")
    shadowed = carrier.locator(".shadowed-under > li")
    assert shadowed.count() == 2
    assert "Your own note “The Lighthouse” replaces the Harbor canon (world) entry" in (
        carrier.inner_text()
    )
    assert "Same name:" in carrier.inner_text()
    assert page.inner_text("#faces-panel .faces-count").startswith(
        "8 entries on top · 2 shadowed shown beneath what replaces them"
    )
    page.locator("#faces-panel").scroll_into_view_if_needed()
    screenshots("faces-explained")
    page.goto("/saves/demo/viewers/npc-oswin/entries/ltm-oswin-01/")
    assert "Replaces “The Lighthouse” in Smugglers' lore (faction) and “The Lighthouse” in" in (
        page.inner_text(".standing")
    )
    screenshots("entry-long-term")
    page.goto("/saves/demo/viewers/npc-tobiah/entries/m-b11-tobiah/")
    assert page.inner_text("h1").startswith("A memory of Tobiah Crane")
    assert page.locator("dd a[href='/saves/demo/viewers/npc-sable/']").inner_text() == "Sable Quint"
    screenshots("entry-buffer")
    assert page.console_errors == []


def test_admin_entity_page_for_the_demo_login_links_both_ways(
    login, page, demo, screenshots
) -> None:
    login(page, "/saves/demo/viewers/npc-pip/")
    # Straight to this save's row (the admin keys rows by uid: ids repeat across saves).
    pip = WorldObject.every_save.get(game_save__name="demo", id="npc-pip")
    page.click("a.admin-link")
    page.wait_for_url(re.compile(rf"/admin/memory/entity/{pip.uid}/change/$"))
    assert page.locator("input[name='aliases-0-label']").count() == 1
    screenshots("admin-entity")
    page.click("text=Open in the inspector")
    page.wait_for_url(re.compile(r"/saves/demo/viewers/npc-pip/$"))
