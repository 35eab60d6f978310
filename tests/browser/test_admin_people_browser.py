"""The admin for people, in Chromium (issue 28 item 6): names first, search by name, targets
by name, the alias history as History, the product's title."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from memory.models import WorldObject
from tests.browser.test_inspector_pages import serious_violations

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_admin_reads_names(login, page, demo, screenshots) -> None:
    login(page, "/admin/memory/entity/")
    assert page.inner_text("#site-name") == "Omnia Memory Inspector — admin"
    page.fill("#searchbar", "maren")
    page.press("#searchbar", "Enter")
    page.wait_for_url("**/admin/memory/entity/?q=maren")
    assert page.locator("#result_list td.field-id").all_inner_texts() == ["npc-maren"]
    assert page.locator("#result_list th.field-name").all_inner_texts() == ["Maren Holloway"]
    screenshots("admin-entity-search")
    page.click("#result_list th.field-name a")
    target = page.locator("#id_aliases-0-target option:checked")
    assert target.inner_text().endswith(")") and " (" in target.inner_text()
    page.fill("#id_aliases-0-label", "the keeper of the lamp")
    page.click("input[name=_save]")
    # One message after the redirect: the green "saved" (no warning beside it).
    expect(page.locator("ul.messagelist li")).to_have_text(["Aliases of Maren Holloway saved."])
    uid = WorldObject.objects.get(id="npc-maren").uid
    page.goto(f"/admin/memory/entity/{uid}/history/")
    rows = page.locator("#change-history tbody tr")
    assert rows.count() == 1
    assert "“the keeper of the lamp”" in rows.first.inner_text()
    assert serious_violations(page) == []
    screenshots("admin-entity-history")
