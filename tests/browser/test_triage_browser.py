"""The leak triage queue in Chromium (issue 28 item 1): two saves in one queue, bulk accept
and its undo, allow a word for an id and its undo, every count following in place — axe clean,
nothing clipped, and shot at 390, 1440 and 1920 px."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from memory.active_save import use
from memory.engine.leaks import stored
from memory.engine.saves import get_save
from memory.models import LeakAcceptance, LeakAllowRule
from tests.browser.test_inspector_pages import (
    CLIPPED_PANELS,
    CLIPPED_TABLES,
    WIDER_THAN_THE_SCREEN,
    serious_violations,
)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def both(lighthouse, millbrook):
    with use(get_save("millbrook")):
        stored.refresh()


def title(page) -> str:
    return " ".join(page.locator("#triage-title").inner_text().split())


def test_the_queue_triages_in_place_with_undo(login, page, both, screenshots) -> None:
    login(page, "/triage/")
    page.set_viewport_size({"width": 1440, "height": 900})
    assert title(page) == "10 findings: 10 open, 0 accepted"
    assert page.locator("header nav a", has_text="Triage").get_attribute("href") == "/triage/"
    assert serious_violations(page) == []
    assert page.evaluate(CLIPPED_TABLES) == []
    screenshots("triage-queue")

    # The save facet narrows the queue in place (no reload: the address bar follows).
    page.select_option("#facet-save", "lighthouse")
    expect(page.locator("#triage-title")).to_contain_text("7 findings")
    assert "/triage/?save=lighthouse" in page.url

    # Tick ada's two first findings, one reason, accept: confirmed in place, counts follow.
    ticks = page.locator("tr.leak-row[data-viewer=ada] input[type=checkbox]")
    ticks.nth(0).check()
    ticks.nth(1).check()
    page.fill("#bulk-reason", "a lighthouse has a keeper")
    page.click("button[value=accept]")
    expect(page.locator(".confirm")).to_contain_text("Accepted 2 findings.")
    assert title(page) == "7 findings: 5 open, 2 accepted"
    assert page.locator("#facet-state option[value=accepted]").inner_text() == "accepted — 2"
    assert LeakAcceptance.every_save.count() == 2
    screenshots("triage-accepted")
    page.locator(".confirm button", has_text="Undo").click()
    expect(page.locator(".confirm")).to_contain_text("Reopened 2 findings.")
    assert title(page) == "7 findings: 7 open, 0 accepted"
    assert LeakAcceptance.every_save.count() == 0

    # Allow "miller" for the id miller in every save: bo's and ada's findings close at once.
    row = page.locator("tr.leak-row[data-viewer=bo]", has_text="miller")
    row.locator("summary").click()
    row.locator("select[name=scope]").select_option("everywhere")
    row.locator("input[name=reason]").fill("a trade, not a name")
    row.locator("button", has_text="Allow").click()
    expect(page.locator(".confirm")).to_contain_text(
        "Allowed “miller” for miller (every save): 2 findings closed."
    )
    assert title(page) == "5 findings: 5 open, 0 accepted"
    assert LeakAllowRule.objects.filter(revoked_at__isnull=True).count() == 1
    screenshots("triage-allowed")
    page.locator(".confirm button", has_text="Undo").click()
    expect(page.locator(".confirm")).to_contain_text("Revoked the rule")
    assert title(page) == "7 findings: 7 open, 0 accepted"
    assert serious_violations(page) == []

    page.goto("/triage/rules/")
    assert "a trade, not a name" in page.locator("table.rules").inner_text()
    assert serious_violations(page) == []
    screenshots("triage-rules")
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto("/triage/")
    assert not page.evaluate(WIDER_THAN_THE_SCREEN)
    assert page.evaluate(CLIPPED_PANELS) == []
    assert page.console_errors == []


def test_a_reader_sees_the_queue_without_its_actions(page, both, client, reader, live_server):
    from django.conf import settings

    client.force_login(reader)
    cookie = client.cookies[settings.SESSION_COOKIE_NAME]
    page.context.add_cookies(
        [{"name": settings.SESSION_COOKIE_NAME, "value": cookie.value, "url": live_server.url}]
    )
    page.goto("/triage/")
    assert title(page) == "10 findings: 10 open, 0 accepted"
    assert page.locator("#bulk").count() == 0
    assert page.locator("details.allow").count() == 0
    assert serious_violations(page) == []
