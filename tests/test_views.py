from __future__ import annotations

import json

import pytest

from memory.models import AliasChange, AuditLog, WorldObject
from memory.rows import remember

CHEST_LINE = "[12:03:00 PM] the hooded figure opened the wooden chest (Outcome: Succeeded)"


def v1(
    description: str, actor: str, targets: list[str] | None = None, type_: str = "action"
) -> dict:
    return {
        "type": type_,
        "originalText": description,
        "description": description,
        "actorId": actor,
        "targetIds": targets or [],
    }


@pytest.fixture
def chest(cast):
    return remember(
        "alice",
        v1("opened the wooden chest", "bob"),
        timestamp="2026-07-06T12:03:00.000Z",
        outcome={"isValid": True, "reason": "it was unlocked"},
    ).entry


@pytest.fixture
def staff(django_user_model):
    return django_user_model.objects.create_user("staff", password="pw", is_staff=True)


@pytest.fixture
def reader(django_user_model):
    return django_user_model.objects.create_user("reader", password="pw")


@pytest.fixture
def staff_client(client, staff):
    client.force_login(staff)
    return client


PAGES = [
    "/",
    "/viewers/alice/",
    "/viewers/alice/aliases/",
    "/viewers/alice/buffer/",
    "/viewers/alice/sessions/",
    "/viewers/alice/faces/",
]


@pytest.mark.parametrize("url", PAGES)
def test_pages_require_login(client, cast, url) -> None:
    r = client.get(url)
    assert r.status_code == 302
    assert r.url.startswith("/accounts/login/")


def test_login_page_renders(client) -> None:
    r = client.get("/accounts/login/")
    assert r.status_code == 200
    assert 'name="username"' in r.content.decode()


@pytest.mark.parametrize("url", PAGES)
def test_every_page_renders_without_js(staff_client, chest, url) -> None:
    r = staff_client.get(url)
    body = r.content.decode()
    assert r.status_code == 200
    assert body.startswith("<!doctype html>")
    assert '<link rel="alternate" type="application/json"' in body
    assert "Content-Security-Policy" in r.headers


def test_viewer_page_shows_rendered_line_and_all_panels(staff_client, chest) -> None:
    body = staff_client.get("/viewers/alice/").content.decode()
    assert CHEST_LINE in body
    for panel in ("aliases-panel", "buffer-panel", "sessions-panel", "faces-panel"):
        assert f'id="{panel}"' in body
    assert '<link rel="alternate" type="application/json" href="/api/viewers/alice/buffer">' in body


@pytest.mark.parametrize(
    ("url", "dom_id"),
    [
        ("/viewers/alice/", "viewer-panels"),
        ("/viewers/alice/aliases/", "aliases-panel"),
        ("/viewers/alice/buffer/", "buffer-panel"),
        ("/viewers/alice/sessions/", "sessions-panel"),
        ("/viewers/alice/faces/", "faces-panel"),
        ("/", "viewer-list"),
    ],
)
def test_htmx_request_returns_only_the_fragment(staff_client, chest, url, dom_id) -> None:
    r = staff_client.get(url, headers={"HX-Request": "true"})
    body = r.content.decode().strip()
    assert r.status_code == 200
    assert "<html" not in body and "<!doctype" not in body
    assert (
        body.split(">", 1)[0].endswith(f'id="{dom_id}"')
        or f'id="{dom_id}"' in body.split(">", 1)[0]
    )
    assert "HX-Request" in r.headers["Vary"]


def test_history_restore_request_gets_the_full_page(staff_client, chest) -> None:
    r = staff_client.get(
        "/viewers/alice/", headers={"HX-Request": "true", "HX-History-Restore-Request": "true"}
    )
    assert r.content.decode().startswith("<!doctype html>")


def test_buffer_fragment_contains_the_seed_line(staff_client, chest) -> None:
    body = staff_client.get(
        "/viewers/alice/buffer/", headers={"HX-Request": "true"}
    ).content.decode()
    assert f'<span class="line">{CHEST_LINE}</span>' in body
    assert 'class="qa-ids"' not in body  # ids are shown only with the QA toggle


def test_buffer_qa_toggle_shows_ids_and_raw_intent(staff_client, chest) -> None:
    body = staff_client.get("/viewers/alice/buffer/?qa=1").content.decode()
    assert chest.id in body
    assert "actor <code>bob</code>" in body
    assert "&quot;description&quot;:&quot;opened the wooden chest&quot;" in body


def test_buffer_filters_by_type_and_text(staff_client, cast, chest) -> None:
    remember(
        "alice",
        v1("Hello there", "charlie", ["alice"], type_="dialogue"),
        timestamp="2026-07-06T12:04:00.000Z",
    )
    body = staff_client.get("/viewers/alice/buffer/?type=dialogue").content.decode()
    assert "the bartender" in body and CHEST_LINE not in body
    body = staff_client.get("/viewers/alice/buffer/?q=wooden").content.decode()
    assert CHEST_LINE in body and "Hello there" not in body


def test_buffer_pages_by_cursor(staff_client, cast, settings) -> None:
    settings.OMNIA_BUFFER_PAGE_SIZE = 2
    for minute in range(5):
        remember(
            "alice", v1(f"waved {minute}", "bob"), timestamp=f"2026-07-06T12:0{minute}:00.000Z"
        )
    body = staff_client.get("/viewers/alice/buffer/").content.decode()
    assert "waved 4" in body and "waved 3" in body and "waved 2" not in body
    older = body.split('rel="prev" href="', 1)[1].split('"', 1)[0].replace("&amp;", "&")
    body = staff_client.get(older).content.decode()
    assert "waved 2" in body and "waved 1" in body and "waved 4" not in body
    assert 'rel="next"' in body


def test_buffer_bad_cursor_is_shown_not_a_500(staff_client, chest) -> None:
    r = staff_client.get("/viewers/alice/buffer/?before=garbage")
    assert r.status_code == 200
    assert "cursor is not one this inspector handed out" in r.content.decode()


def test_unknown_viewer_is_404(staff_client, cast) -> None:
    assert staff_client.get("/viewers/nobody/").status_code == 404
    assert staff_client.get("/viewers/nobody/buffer/").status_code == 404


def test_script_in_a_description_is_escaped(staff_client, cast) -> None:
    remember("alice", v1("<script>alert(1)</script>", "bob"), timestamp="2026-07-06T12:05:00.000Z")
    body = staff_client.get("/viewers/alice/?qa=1").content.decode()
    assert "<script>alert(1)</script>" not in body
    assert "the hooded figure &lt;script&gt;alert(1)&lt;/script&gt;" in body


def test_script_in_an_alias_is_escaped_on_the_overview(staff_client, cast) -> None:
    WorldObject.objects.filter(pk="alice").update(aliases_json=json.dumps([["bob", "<b>bold</b>"]]))
    body = staff_client.get("/").content.decode()
    assert "&lt;b&gt;bold&lt;/b&gt;" in body and "<b>bold</b>" not in body


def test_overview_matrix_and_search(staff_client, cast) -> None:
    body = staff_client.get("/").content.decode()
    assert (
        'class="state-descriptor" data-viewer="alice" data-target="bob" title="descriptor">'
        "the hooded figure</td>" in body
    )
    assert (
        'class="state-known" data-viewer="charlie" data-target="bob" title="known">Gareth</td>'
        in body
    )
    assert (
        'class="state-unknown" data-viewer="bob" data-target="charlie" title="unknown">—</td>'
        in body
    )
    body = staff_client.get("/?q=gareth", headers={"HX-Request": "true"}).content.decode()
    assert '<a href="/viewers/bob/">bob</a>' in body and '<a href="/viewers/alice/">' not in body


def test_aliases_panel_shows_state_true_name_and_suggestion(staff_client, cast) -> None:
    body = staff_client.get(
        "/viewers/alice/aliases/", headers={"HX-Request": "true"}
    ).content.decode()
    assert 'value="the hooded figure"' in body
    assert '<td class="qa-info">Gareth</td>' in body
    assert (
        "the tall cloaked man" in body or "the tall" in body
    )  # derived from bob's PUBLIC appearance


def test_missing_engine_module_says_so(staff_client, cast, monkeypatch) -> None:
    from memory import selectors

    real = selectors.engine_module
    monkeypatch.setattr(
        selectors, "engine_module", lambda name: None if name == "doors" else real(name)
    )
    body = staff_client.get(
        "/viewers/alice/sessions/", headers={"HX-Request": "true"}
    ).content.decode()
    assert "not available yet: memory.doors missing" in body


def test_faces_panel_without_module_says_missing(staff_client, cast) -> None:
    from memory import selectors

    body = staff_client.get(
        "/viewers/alice/faces/", headers={"HX-Request": "true"}
    ).content.decode()
    if selectors.engine_module("faces") is None:
        assert "not available yet: memory.faces missing" in body


def test_alias_inline_edit_changes_buffer_and_history(staff_client, staff, chest) -> None:
    r = staff_client.post(
        "/viewers/alice/aliases/bob/",
        {"label": "Gareth", "action": "set"},
        headers={"HX-Request": "true"},
    )
    assert r.status_code == 200
    assert r.headers["HX-Trigger"] == "aliases-changed"
    body = r.content.decode()
    assert body.lstrip().startswith('<section id="aliases-panel"')
    assert "“the hooded figure” → “Gareth”" in body
    assert json.loads(WorldObject.objects.get(pk="alice").aliases_json) == [
        ["bob", "Gareth"],
        ["charlie", "the bartender"],
    ]
    change = AliasChange.objects.get()
    assert (change.before, change.after, change.changed_by, change.source) == (
        "the hooded figure",
        "Gareth",
        staff,
        "inspector",
    )
    assert AuditLog.objects.filter(action="alias.set").count() == 1
    buffer = staff_client.get("/viewers/alice/buffer/").content.decode()
    assert "[12:03:00 PM] Gareth opened the wooden chest (Outcome: Succeeded)" in buffer


def test_alias_edit_without_js_redirects(staff_client, chest) -> None:
    r = staff_client.post("/viewers/alice/aliases/bob/", {"label": "the stranger", "action": "set"})
    assert r.status_code == 302 and r.url == "/viewers/alice/aliases/"


def test_alias_delete(staff_client, chest) -> None:
    staff_client.post("/viewers/alice/aliases/bob/", {"action": "delete"})
    assert json.loads(WorldObject.objects.get(pk="alice").aliases_json) == [
        ["charlie", "the bartender"]
    ]
    buffer = staff_client.get("/viewers/alice/buffer/").content.decode()
    assert (
        "[12:03:00 PM] an unfamiliar figure opened the wooden chest (Outcome: Succeeded)" in buffer
    )
    assert AliasChange.objects.get().after is None


@pytest.mark.parametrize(
    ("target", "label", "error"),
    [
        ("bob", "charlie", "label &#x27;charlie&#x27; is a system id"),
        ("bob", "x 0f8fad5b-d9cb-469f-a165-70867728950e", "contains a generated id"),
        ("alice", "me", "an entity&#x27;s alias for itself is never used"),
        ("nobody", "a ghost", "target &#x27;nobody&#x27; is not an object of this world"),
        ("bob", "   ", "label must not be empty"),
    ],
)
def test_alias_edit_validation_inline(staff_client, cast, target, label, error) -> None:
    before = WorldObject.objects.get(pk="alice").aliases_json
    r = staff_client.post(
        f"/viewers/alice/aliases/{target}/",
        {"label": label, "action": "set"},
        headers={"HX-Request": "true"},
    )
    assert r.status_code == 200
    assert "HX-Trigger" not in r.headers
    assert error in r.content.decode()
    assert WorldObject.objects.get(pk="alice").aliases_json == before
    assert not AliasChange.objects.exists()
    r = staff_client.post(f"/viewers/alice/aliases/{target}/", {"label": label, "action": "set"})
    assert r.status_code == 400 and error in r.content.decode()


def test_alias_warning_for_label_with_another_id(staff_client, cast) -> None:
    r = staff_client.post(
        "/viewers/alice/aliases/bob/",
        {"label": "charlie's friend", "action": "set"},
        headers={"HX-Request": "true"},
    )
    assert "contains the system id &#x27;charlie&#x27;" in r.content.decode()


def test_alias_edit_forbidden_for_non_staff(client, reader, cast) -> None:
    client.force_login(reader)
    assert client.post("/viewers/alice/aliases/bob/", {"label": "x"}).status_code == 403
    body = client.get("/viewers/alice/aliases/").content.decode()
    assert 'class="alias-form"' not in body


def test_viewer_switch_links_are_permalinks_with_htmx(staff_client, cast) -> None:
    body = staff_client.get("/viewers/alice/").content.decode()
    assert (
        '<a href="/viewers/bob/" hx-get="/viewers/bob/" hx-target="#viewer-panels" '
        'hx-swap="outerHTML" hx-push-url="true">bob</a>' in body
    )


def test_entry_page(staff_client, chest) -> None:
    r = staff_client.get(f"/viewers/alice/entries/{chest.id}/")
    assert r.status_code == 200 and CHEST_LINE in r.content.decode()
    assert staff_client.get("/viewers/alice/entries/nope/").status_code == 404
