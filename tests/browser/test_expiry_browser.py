"""Nothing lost on expiry, in Chromium (issue 28 item 3): an alias Save after the session
ended keeps the typed label and is sent again after signing in, in a new tab or in place; a
stale token is renewed and the edit sent; a plain form's CSRF failure is the styled page."""

from __future__ import annotations

import json
import re

import pytest
from django.contrib.sessions.models import Session
from playwright.sync_api import expect

from memory.models import AliasChange, WorldObject
from tests.browser.test_inspector_pages import serious_violations
from tests.helpers import DESIGNER_PASSWORD

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
VIEWER = "/saves/demo/viewers/npc-pip/"
FIELD = "#label-npc-sable"


def label_of(viewer: str, target: str) -> str | None:
    return dict(json.loads(WorldObject.objects.get(id=viewer).aliases_json)).get(target)


def sign_in(page) -> None:
    page.fill("#id_username", "designer")
    page.fill("#id_password", DESIGNER_PASSWORD)
    page.click("button[type=submit]")


def test_save_after_the_session_ended_keeps_the_text_and_sends_it_after_signing_in_elsewhere(
    login, page, context, demo, screenshots
) -> None:
    login(page, VIEWER)
    before = label_of("npc-pip", "npc-sable")
    Session.objects.all().delete()  # the session ends while the page is open
    page.fill(FIELD, "the woman in grey")
    page.click("#alias-npc-sable button[value=set]")
    box = page.locator("#aliases-panel .reauth[role=alert]")
    box.wait_for()
    assert box.locator("p").inner_text() == (
        "Your session has ended, so your change was not saved. What you typed is kept here."
    )
    assert page.input_value(FIELD) == "the woman in grey"  # nothing swapped, nothing lost
    assert page.url.endswith(VIEWER)
    assert label_of("npc-pip", "npc-sable") == before
    expect(box.locator("a", has_text="Sign in in a new tab")).to_be_focused()
    # The browser and htmx each log the refused write once; nothing else went wrong
    # (read before axe runs: its injected styles meet the CSP).
    assert page.console_errors == [
        "Failed to load resource: the server responded with a status of 401 (Unauthorized)",
        "Response Status Error Code 401 from /saves/demo/viewers/npc-pip/aliases/npc-sable/, "
        "[object HTMLElement]",
    ]
    assert serious_violations(page) == []
    screenshots("expiry-session-ended")
    # Signing in in a new tab, then back to this one: Send it again saves the typed label.
    with context.expect_page() as opened:
        box.locator("a", has_text="Sign in in a new tab").click()
    other = opened.value
    other.wait_for_load_state()
    assert "/accounts/login/?next=%2Fsaves%2Fdemo%2Fviewers%2Fnpc-pip%2F" in other.url
    sign_in(other)
    other.wait_for_url(re.compile(r"/saves/demo/viewers/npc-pip/$"))
    other.close()
    with page.expect_response(re.compile(r"/aliases/npc-sable/$")) as sent:
        box.locator("button", has_text="Send it again").click()
    assert sent.value.status == 200
    page.wait_for_selector("#aliases-panel .reauth", state="detached")
    expect(page.locator(FIELD)).to_have_value("the woman in grey")
    assert label_of("npc-pip", "npc-sable") == "the woman in grey"
    change = AliasChange.objects.order_by("-id").first()
    assert (change.before, change.after, change.source) == (
        before,
        "the woman in grey",
        "inspector",
    )


def test_signing_in_here_brings_the_typed_label_back_to_save(
    login, page, demo, screenshots
) -> None:
    login(page, VIEWER)
    before = label_of("npc-pip", "npc-sable")
    Session.objects.all().delete()
    page.fill(FIELD, "the grey one")
    page.click("#alias-npc-sable button[value=set]")
    page.locator("#aliases-panel .reauth a", has_text="sign in here").click()
    page.wait_for_url(re.compile(r"/accounts/login/\?next=%2Fsaves%2Fdemo%2Fviewers%2Fnpc-pip%2F$"))
    sign_in(page)
    page.wait_for_url(re.compile(r"/saves/demo/viewers/npc-pip/$"))
    restored = page.locator("#aliases-panel .reauth.restored")
    restored.wait_for()
    assert page.input_value(FIELD) == "the grey one"
    assert label_of("npc-pip", "npc-sable") == before  # not saved until asked
    expect(restored.locator("button", has_text="Save it now")).to_be_focused()
    screenshots("expiry-restored")
    with page.expect_response(re.compile(r"/aliases/npc-sable/$")) as sent:
        restored.locator("button", has_text="Save it now").click()
    assert sent.value.status == 200
    page.wait_for_selector("#aliases-panel .reauth", state="detached")
    assert label_of("npc-pip", "npc-sable") == "the grey one"
    # The edit waited in this tab only and is gone once sent: a reload restores nothing.
    page.reload()
    assert page.locator(".reauth").count() == 0
    assert page.input_value(FIELD) == "the grey one"


def test_stale_token_is_renewed_and_the_edit_sent_again(login, page, context, demo) -> None:
    login(page, VIEWER)
    # Cookies cleared (the session and the token with them), then signed in again elsewhere:
    # this page's token no longer matches.
    context.clear_cookies()
    other = context.new_page()
    other.goto(f"/accounts/login/?next={VIEWER}")
    sign_in(other)
    other.wait_for_url(re.compile(r"/saves/demo/viewers/npc-pip/$"))
    other.close()
    page.fill(FIELD, "Sable of the <b>docks</b>")
    page.click("#alias-npc-sable button[value=set]")
    box = page.locator("#aliases-panel .reauth")
    box.wait_for()
    assert box.locator("p").inner_text().startswith("This page's security token went stale")
    assert page.input_value(FIELD) == "Sable of the <b>docks</b>"
    with page.expect_response(re.compile(r"/aliases/npc-sable/$")) as sent:
        box.locator("button", has_text="Send it again").click()
    assert sent.value.status == 200
    assert label_of("npc-pip", "npc-sable") == "Sable of the <b>docks</b>"
    assert page.locator("#aliases-panel b").count() == 0  # hostile text stays text


def test_plain_form_csrf_failure_is_the_styled_page(
    login, page, context, demo, screenshots
) -> None:
    login(page, "/saves/demo/")
    page.evaluate(
        "document.querySelectorAll('input[name=csrfmiddlewaretoken]')"
        ".forEach(i => { i.value = 'x'.repeat(32); })"
    )
    page.click("form.logout button[type=submit]")
    page.wait_for_selector("h1#error-title")
    assert page.title() == "Your change was not saved — Omnia Memory Inspector"
    assert page.locator("ol.recover li").first.inner_text() == (
        "Go back to the page you were on: what you typed is usually still in the form."
    )
    assert page.locator("ol.recover a").first.get_attribute("href").endswith("/saves/demo/")
    assert serious_violations(page) == []
    screenshots("expiry-csrf-page")
