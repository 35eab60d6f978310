"""Issue 14 items 3, 11, 12 and issue 15 item 8: refusals in their shape (styled pages with
the site's navigation, htmx fragments, the API's JSON), body-size errors included; HEAD on
pages; /healthz with numbers only."""

from __future__ import annotations

import json

import pytest
from django.test import override_settings

from tests.helpers import write

pytestmark = pytest.mark.usefixtures("cast")


def test_404_page_is_styled_with_navigation_and_the_message(staff_client) -> None:
    r = staff_client.get("/saves/cast/viewers/nobody/")
    body = r.content.decode()
    assert r.status_code == 404
    assert body.startswith("<!doctype html>")
    assert 'class="site-header"' in body and 'aria-label="Main"' in body
    assert "inspector.css" in body
    assert '<h1 id="error-title">Not found' in body
    assert "no entity with id &#x27;nobody&#x27;" in body
    assert 'href="/">Back to the overview</a>' in body


def test_unknown_address_is_a_styled_404_without_resolver_internals(staff_client) -> None:
    r = staff_client.get("/no/such/page/")
    body = r.content.decode()
    assert r.status_code == 404
    assert "Nothing is at this address." in body
    assert "urlpatterns" not in body and "omnia_site.urls" not in body


def test_htmx_gets_the_error_as_a_panel_fragment(staff_client) -> None:
    r = staff_client.get("/saves/cast/viewers/nobody/buffer/", HTTP_HX_REQUEST="true")
    body = r.content.decode()
    assert r.status_code == 404
    assert body.lstrip().startswith('<section class="panel error-page" role="alert"')
    assert "<html" not in body and "site-header" not in body


def test_403_page_is_styled(reader_client) -> None:
    r = reader_client.post("/saves/cast/projections/cycle/")
    body = r.content.decode()
    assert r.status_code == 403
    assert 'class="site-header"' in body and "Not allowed" in body


def test_api_unknown_route_is_json_in_the_error_shape(staff_client) -> None:
    r = staff_client.get("/api/no-such-thing")
    assert r.status_code == 404
    assert r.json() == {"detail": "Nothing is at this address.", "code": "not_found", "field": None}


def test_500_page_is_styled_and_says_nothing_of_the_cause(staff_client, monkeypatch) -> None:
    from memory.web.views import overview

    def boom(*args, **kwargs):
        raise RuntimeError("secret internals")

    monkeypatch.setattr(overview.save_reads, "summaries", boom)
    staff_client.raise_request_exception = False
    r = staff_client.get("/")
    body = r.content.decode()
    assert r.status_code == 500
    assert 'class="site-header"' in body and "Something went wrong" in body
    assert "secret internals" not in body


@override_settings(DATA_UPLOAD_MAX_MEMORY_SIZE=1000)
def test_a_body_over_the_limit_is_413_in_the_error_shape(staff_client) -> None:
    big = json.dumps({"label": "x" * 5000})
    r = staff_client.put(
        "/api/saves/cast/viewers/alice/aliases/bob", big, content_type="application/json"
    )
    assert r.status_code == 413
    assert r.json() == {
        "detail": "The request body is larger than this site accepts.",
        "code": "too_large",
        "field": None,
    }
    r = staff_client.post("/saves/cast/viewers/alice/aliases/bob/", {"label": "x" * 5000})
    assert r.status_code == 413
    assert 'class="site-header"' in r.content.decode()


def test_head_on_pages_answers_like_get_without_a_body(staff_client) -> None:
    write("alice", 1)
    for url in (
        "/",
        "/saves/cast/viewers/alice/",
        "/saves/cast/leaks/",
        "/saves/cast/viewers/alice/prompt/",
    ):
        got = staff_client.get(url)
        head = staff_client.head(url)
        assert (head.status_code, got.status_code) == (200, 200), url
        assert head.content == b""
        assert head["Content-Type"] == got["Content-Type"]


def test_nul_in_an_api_field_is_a_4xx_not_a_database_error(staff_client) -> None:
    for field in ("location_id", "conversation_id", "timestamp"):
        payload = {
            "intent": {"type": "dialogue", "originalText": "hi", "description": "hi",
                       "actorId": "alice", "targetIds": []},
            "timestamp": "2026-07-06T12:40:00.000Z",
        } | {field: "bad\x00value"}  # fmt: skip
        r = staff_client.post(
            "/api/saves/cast/viewers/alice/memories",
            json.dumps(payload),
            content_type="application/json",
        )
        assert r.status_code == 422, (field, r.content)
        assert set(r.json()) == {"detail", "code", "field"}


def test_healthz_shows_numbers_only_no_ids(client, cast) -> None:
    from memory.engine.projections import run_cycle

    write("alice", 1, entry_id="secret-entry-id")
    run_cycle()
    body = client.get("/healthz").content.decode()
    assert "secret-entry-id" not in body and "watermark" not in body
    shard = json.loads(body)["shards"][0]
    assert set(shard) == {"shard", "rows_behind", "last_cycle_at", "last_cycle_rows"}
