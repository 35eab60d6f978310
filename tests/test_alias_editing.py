"""Inline alias editing and htmx at the edges (issue 15 item 7), through the pages: a refused
label stays in its input beside the reason; a label that is another entity's true name is
saved with a warning; undo from the history is an audited edit; "use" takes the suggestion
derived on the server; an expired session answers htmx with HX-Redirect; plus the noise the
sessions panel no longer shows."""

from __future__ import annotations

import json
import re

import pytest

from memory.models import AliasChange, AuditLog, MemorySession, WorldObject

HX = {"HX-Request": "true"}
pytestmark = pytest.mark.usefixtures("cast")


def aliases_of(entity_id: str) -> dict[str, str]:
    return dict(json.loads(WorldObject.objects.get(id=entity_id).aliases_json))


def test_refused_label_stays_in_its_input_beside_the_reason(editor_client) -> None:
    r = editor_client.post(
        "/saves/cast/viewers/alice/aliases/bob/", {"label": "charlie", "action": "set"}, headers=HX
    )
    body = r.content.decode()
    assert r.status_code == 200
    assert (
        '<input id="label-bob" name="label" value="charlie" placeholder="the hooded figure" '
        'aria-invalid="true" aria-describedby="alias-err-bob">'
    ) in body
    assert (
        '<ul class="error" id="alias-err-bob" role="alert"><li>label &#x27;charlie&#x27; is a '
        "system id</li>"
    ) in body
    assert "still calls them “the hooded figure”" in body
    assert aliases_of("alice")["bob"] == "the hooded figure"
    assert AliasChange.objects.count() == 0
    # Without htmx the refusal is a 400 page, the refused label still in the input.
    plain = editor_client.post("/saves/cast/viewers/alice/aliases/bob/", {"label": "charlie"})
    assert plain.status_code == 400
    assert 'name="label" value="charlie"' in plain.content.decode()


def test_label_that_is_another_entitys_true_name_is_saved_with_a_warning(editor_client) -> None:
    r = editor_client.post(
        "/saves/cast/viewers/alice/aliases/bob/", {"label": "Charlie", "action": "set"}, headers=HX
    )
    body = r.content.decode()
    assert r.status_code == 200
    assert aliases_of("alice")["bob"] == "Charlie"
    assert (
        '<ul class="warning" id="alias-warn-bob" role="status"><li>Saved, but: “Charlie” is the '
        "true name of charlie (Charlie): lines about bob will read as if they were about "
        "Charlie</li></ul>"
    ) in body
    # The target's own true name is no warning: that is simply knowing them.
    r = editor_client.post(
        "/saves/cast/viewers/alice/aliases/bob/", {"label": "Gareth"}, headers=HX
    )
    assert 'class="warning"' not in r.content.decode()


def test_undo_from_history_restores_the_label_as_an_audited_edit(editor_client) -> None:
    editor_client.post(
        "/saves/cast/viewers/alice/aliases/bob/", {"label": "the stranger"}, headers=HX
    )
    change = AliasChange.objects.get()
    r = editor_client.post(
        "/saves/cast/viewers/alice/aliases/bob/",
        {"action": "restore", "change": str(change.id)},
        headers=HX,
    )
    assert r.status_code == 200
    assert aliases_of("alice")["bob"] == "the hooded figure"
    undo = AliasChange.objects.order_by("-id").first()
    assert (undo.before, undo.after, undo.source) == (
        "the stranger",
        "the hooded figure",
        "inspector undo",
    )
    assert AuditLog.objects.filter(action="alias.set", target="alice->bob").count() == 2
    assert "Undo: back to “the stranger”" in r.content.decode()  # the undo can be undone


def test_undo_of_a_first_label_forgets_it_again(editor_client) -> None:
    editor_client.post(
        "/saves/cast/viewers/alice/aliases/charlie/", {"action": "delete"}, headers=HX
    )
    editor_client.post(
        "/saves/cast/viewers/alice/aliases/charlie/", {"label": "the barkeep"}, headers=HX
    )
    first = AliasChange.objects.get(after="the barkeep")
    editor_client.post(
        "/saves/cast/viewers/alice/aliases/charlie/",
        {"action": "restore", "change": first.id},
        headers=HX,
    )
    assert "charlie" not in aliases_of("alice")
    assert AliasChange.objects.order_by("-id").first().after is None


def test_undo_of_another_viewers_change_is_a_404_and_writes_nothing(editor_client) -> None:
    editor_client.post("/saves/cast/viewers/bob/aliases/alice/", {"label": "the girl"}, headers=HX)
    theirs = AliasChange.objects.get()
    r = editor_client.post(
        "/saves/cast/viewers/alice/aliases/bob/",
        {"action": "restore", "change": theirs.id},
        headers=HX,
    )
    assert r.status_code == 404
    r = editor_client.post(
        "/saves/cast/viewers/alice/aliases/bob/", {"action": "restore", "change": "x"}, headers=HX
    )
    assert r.status_code == 200 and "no history entry named to undo" in r.content.decode()
    assert AliasChange.objects.count() == 1


def test_use_suggestion_stores_the_descriptor_derived_on_the_server(editor_client) -> None:
    r = editor_client.post(
        "/saves/cast/viewers/alice/aliases/bob/",
        {"action": "suggest", "label": "anything posted is ignored"},
        headers=HX,
    )
    assert r.status_code == 200
    label = aliases_of("alice")["bob"]
    assert label == "the tall hooded man"
    assert AliasChange.objects.get().after == label


def test_forget_button_asks_first_and_use_button_is_offered(editor_client) -> None:
    body = editor_client.get("/saves/cast/viewers/alice/aliases/", headers=HX).content.decode()
    assert (
        'value="delete" class="secondary" data-confirm="Forget the label “the hooded figure”'
        in (body)
    )
    assert 'aria-label="Use “the tall hooded man” as the label' in body


def test_expired_session_answers_htmx_with_hx_redirect_to_login(client, cast) -> None:
    r = client.get(
        "/saves/cast/viewers/alice/aliases/",
        headers={**HX, "HX-Current-URL": "http://testserver/viewers/alice/?qa=1"},
    )
    assert r.status_code == 200
    assert r["HX-Redirect"] == "/accounts/login/?next=%2Fviewers%2Falice%2F%3Fqa%3D1"
    assert r.content == b""
    # A write is not redirected (the form would lose what was typed): a 401 that swaps
    # nothing, saying where to sign in (tests/test_expiry.py).
    post = client.post("/saves/cast/viewers/alice/aliases/bob/", {"label": "x"}, headers=HX)
    assert post.status_code == 401 and "HX-Redirect" not in post
    # Another site's address is never trusted as the way back.
    evil = client.get(
        "/saves/cast/viewers/alice/", headers={**HX, "HX-Current-URL": "https://evil.example/x"}
    )
    assert evil["HX-Redirect"] == "/accounts/login/?next=%2Fsaves%2Fcast%2Fviewers%2Falice%2F"
    # Without htmx it stays the ordinary redirect.
    plain = client.get("/saves/cast/viewers/alice/")
    assert plain.status_code == 302 and "HX-Redirect" not in plain


def test_viewer_swap_carries_the_new_title(editor_client) -> None:
    body = editor_client.get("/saves/cast/viewers/bob/", headers=HX).content.decode()
    assert body.lstrip().startswith("<title>Gareth — Omnia Memory Inspector</title>")  # names first
    full = editor_client.get("/saves/cast/viewers/bob/").content.decode()
    assert full.count("<title>") == 1


def test_sessions_panel_without_sessions_shows_no_hash_of_nothing(editor_client) -> None:
    body = editor_client.get("/saves/cast/viewers/alice/sessions/", headers=HX).content.decode()
    assert "No sessions projected yet." in body
    assert "hash" not in body and "e3b0c442" not in body


def test_scene_without_a_place_is_not_called_scene_scene(editor_client, cast) -> None:
    common = {
        "owner_id": "alice",
        "first_at": "2026-07-06T12:00:00.000Z",
        "last_at": "2026-07-06T12:05:00.000Z",
        "memory_count": 1,
        "dialogue_count": 0,
        "last_member_id": "m-1",
        "content_hash": "h",
    }
    MemorySession.objects.create(session_key="scene:", **common)
    MemorySession.objects.create(session_key="scene:tavern-main", **common)
    body = editor_client.get("/saves/cast/viewers/alice/sessions/", headers=HX).content.decode()
    # By place, as alice calls it (tavern-main is no object she can read a name of), no keys.
    assert "<td>A scene at an unknown place\n" in body
    assert "<td>A scene at an unfamiliar place\n" in body
    assert "tavern-main" not in re.sub(r"<[^>]+>", "", body)  # only in ids and attributes
    qa = editor_client.get("/saves/cast/viewers/alice/sessions/?qa=1", headers=HX)
    assert (
        '<td>A scene at an unfamiliar place <code class="id-hint">scene:tavern-main</code>'
        in qa.content.decode()
    )
