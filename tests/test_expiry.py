"""Nothing lost on expiry (issue 28 item 3): an htmx write after the session ended or the CSRF
token went stale swaps nothing and says how to sign in again; a real CSRF failure is a styled
page that says what happened and how to get the change back; the API keeps its JSON shape."""

from __future__ import annotations

import json

import pytest
from django.test import Client

from memory.models import AliasChange, AuditLog, WorldObject

HX = {"HX-Request": "true"}
pytestmark = pytest.mark.usefixtures("cast")
ALIAS = "/saves/cast/viewers/alice/aliases/bob/"


def label_of_bob() -> str:
    return dict(json.loads(WorldObject.objects.get(id="alice").aliases_json))["bob"]


def test_htmx_write_without_a_session_is_a_401_naming_the_login_page(client) -> None:
    r = client.post(
        ALIAS,
        {"label": "the stranger", "action": "set"},
        headers={**HX, "HX-Current-URL": "http://testserver/saves/cast/viewers/alice/?qa=1"},
    )
    assert r.status_code == 401
    assert r["X-Omnia-Reauth"] == "login"
    assert (
        r["X-Omnia-Login"] == "/accounts/login/?next=%2Fsaves%2Fcast%2Fviewers%2Falice%2F%3Fqa%3D1"
    )
    assert "HX-Redirect" not in r
    assert r.content.decode() == (
        "Your session has ended: sign in again, then send the change again."
    )
    assert label_of_bob() == "the hooded figure"
    assert AliasChange.objects.count() == 0


def test_htmx_read_without_a_session_still_redirects_the_window(client) -> None:
    r = client.get("/saves/cast/viewers/alice/aliases/", headers=HX)
    assert r.status_code == 200
    assert (
        r["HX-Redirect"] == "/accounts/login/?next=%2Fsaves%2Fcast%2Fviewers%2Falice%2Faliases%2F"
    )
    assert "X-Omnia-Reauth" not in r


def test_htmx_write_with_a_stale_token_is_a_403_to_send_again(editor) -> None:
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(editor)
    r = browser.post(
        ALIAS,
        {"label": "the stranger", "action": "set"},
        headers={
            **HX,
            "X-CSRFToken": "stale" * 8,
            "HX-Current-URL": "http://testserver/saves/cast/viewers/alice/",
        },
    )
    assert r.status_code == 403
    assert r["X-Omnia-Reauth"] == "csrf"
    assert r["X-Omnia-Login"] == "/accounts/login/?next=%2Fsaves%2Fcast%2Fviewers%2Falice%2F"
    assert r.content.decode() == (
        "This page's security token no longer matches your browser's: you signed out or in "
        "again in another tab, your cookies were cleared, or the page was open a very long "
        "time. Nothing was changed. Send it again to save it."
    )
    assert label_of_bob() == "the hooded figure"
    assert AuditLog.objects.count() == 0


def test_plain_form_with_a_stale_token_gets_the_styled_page(editor) -> None:
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(editor)
    r = browser.post(
        ALIAS,
        {"label": "<script>alert(1)</script>", "csrfmiddlewaretoken": "x" * 32},
        headers={"Referer": "http://testserver/saves/cast/viewers/alice/"},
    )
    body = r.content.decode()
    assert r.status_code == 403
    assert "<title>Your change was not saved — Omnia Memory Inspector</title>" in body
    assert '<header class="site-header">' in body  # the site's own page, not Django's
    assert "CSRF verification failed" not in body
    assert '<p class="error" data-error-message>This page&#x27;s security token' in body
    assert (
        '<li><a href="http://testserver/saves/cast/viewers/alice/">Go back to the page you '
        "were on</a>: what you typed is usually still in the form.</li>"
    ) in body
    assert (
        "<li>Reload that page so it carries a fresh token, and send the change again.</li>" in body
    )
    assert "<script>alert" not in body
    assert label_of_bob() == "the hooded figure"


def test_styled_csrf_page_never_links_back_to_another_site(client) -> None:
    browser = Client(enforce_csrf_checks=True)
    r = browser.post(ALIAS, {"label": "x"}, headers={"Referer": "https://evil.example/x"})
    body = r.content.decode()
    assert r.status_code == 403
    assert "evil.example" not in body
    assert "Go back to the page you were on (your browser's Back button)" in body
    # Signed out: the way back runs through the login page, to the overview.
    assert '<a href="/accounts/login/?next=%2F">Sign in again</a>, then reload that page' in body


def test_api_write_with_a_stale_token_keeps_the_api_shape(editor) -> None:
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(editor)
    r = browser.put(
        "/api/saves/cast/viewers/alice/aliases/bob",
        {"label": "the stranger"},
        content_type="application/json",
    )
    assert r.status_code == 403
    assert r.json() == {"detail": "CSRF check Failed", "code": "forbidden", "field": None}
    assert label_of_bob() == "the hooded figure"
