"""Issue 14 item 8: one audit row per effective write from every door (pages, API, admin,
CLI), none for a no-op; raw tokens shown once on a page, never in a cookie; token expiry."""

from __future__ import annotations

import getpass
import io
import json
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.utils import timezone

from memory.models import ApiToken, AuditLog, BufferEntry
from memory.tokens import issue_token
from tests.helpers import FIXTURES, write

V1 = FIXTURES / "omnia-74ffb45-tavern.sqlite"
SCENARIO = FIXTURES / "omnia-scenario-talking-room-c292626.json"
CLI = f"cli:{getpass.getuser()}"


def rows() -> list[tuple[str, str, str | None, str]]:
    """(action, target, actor's username or None, actor_label) of every audit row, in order."""
    return [
        (a.action, a.target, a.actor.username if a.actor else None, a.actor_label)
        for a in AuditLog.objects.select_related("actor").order_by("id")
    ]


# --- pages ----------------------------------------------------------------------------------


def test_page_alias_edit_is_one_row_and_a_repeat_is_none(client, cast, editor):
    client.force_login(editor)
    r = client.post("/saves/cast/viewers/alice/aliases/bob/", {"label": "the stranger"})
    assert r.status_code == 302
    client.post(
        "/saves/cast/viewers/alice/aliases/bob/", {"label": "the stranger"}
    )  # the same: no-op
    assert rows() == [("alias.set", "alice->bob", "eddie", "")]


def test_overview_cycle_row_carries_its_actor_and_an_idle_cycle_writes_none(client, cast, editor):
    client.force_login(editor)
    write("alice", 1)
    assert client.post("/saves/cast/projections/cycle/").status_code == 302
    assert client.post("/saves/cast/projections/cycle/").status_code == 302  # nothing left to fold
    assert rows() == [("projections.cycle", "projections", "eddie", "")]


# --- API ------------------------------------------------------------------------------------


def test_api_retract_twice_is_one_row_and_the_second_answers_a_no_op(client, cast, editor):
    entry_id = write("alice", 1)
    auth = {"HTTP_AUTHORIZATION": f"Bearer {issue_token(editor, 'ci')[1]}"}
    first = client.post(f"/api/saves/cast/memories/{entry_id}/retract", **auth)
    second = client.post(f"/api/saves/cast/memories/{entry_id}/retract", **auth)
    assert (first.status_code, first.json()["changed"]) == (200, True)
    assert (second.status_code, second.json()["changed"]) == (200, False)
    assert rows() == [("memory.retract", f"alice/{entry_id}", "eddie", "")]
    assert BufferEntry.objects.get(id=entry_id).retracted_at is not None


# --- admin: tokens --------------------------------------------------------------------------


def test_admin_token_create_shows_the_raw_token_once_on_the_page_and_audits(
    root_client, django_user_model, cast
):
    owner = django_user_model.objects.create_user("bot", password="pw")
    r = root_client.post(
        "/admin/memory/apitoken/add/", {"user": owner.pk, "name": "ci", "expires_at": ""}
    )
    assert r.status_code == 200
    token = ApiToken.objects.get()
    body = r.content.decode()
    raw = body.split('<code id="raw-token">')[1].split("</code>")[0]
    assert raw.startswith(token.prefix) and len(raw) > 20
    # Never in a cookie (Django's messages cookie is signed, not encrypted).
    assert all(raw not in morsel.value for morsel in r.cookies.values())
    assert "messages" not in r.cookies
    assert "no-store" in r["Cache-Control"]
    # The token works, and the next page does not show it again.
    assert root_client.get("/admin/memory/apitoken/").content.decode().count(raw) == 0
    assert (
        root_client.get("/api/saves/cast/entities", HTTP_AUTHORIZATION=f"Bearer {raw}").status_code
        == 200
    )
    assert rows() == [("token.create", f"token:{token.pk}", "root", "")]


def test_admin_token_delete_is_one_row_each(root_client, django_user_model):
    owner = django_user_model.objects.create_user("bot", password="pw")
    one, _ = issue_token(owner, "one")
    two, _ = issue_token(owner, "two")
    r = root_client.post(f"/admin/memory/apitoken/{one.pk}/delete/", {"post": "yes"})
    assert r.status_code == 302
    r = root_client.post(
        "/admin/memory/apitoken/",
        {"action": "delete_selected", "_selected_action": [two.pk], "post": "yes"},
    )
    assert r.status_code == 302
    assert not ApiToken.objects.exists()
    assert rows() == [
        ("token.delete", f"token:{one.pk}", "root", ""),
        ("token.delete", f"token:{two.pk}", "root", ""),
    ]


def test_an_expired_token_is_refused_and_one_without_expiry_is_not(client, cast, django_user_model):
    owner = django_user_model.objects.create_user("bot", password="pw")
    expired, raw_expired = issue_token(owner, "old")
    expired.expires_at = timezone.now() - timedelta(seconds=1)
    expired.save()
    later, raw_later = issue_token(owner, "new")
    later.expires_at = timezone.now() + timedelta(days=1)
    later.save()
    _, raw_forever = issue_token(owner, "forever")
    r = client.get("/api/saves/cast/entities", HTTP_AUTHORIZATION=f"Bearer {raw_expired}")
    assert (r.status_code, r.json()["code"]) == (401, "unauthorized")
    for raw in (raw_later, raw_forever):
        assert (
            client.get("/api/saves/cast/entities", HTTP_AUTHORIZATION=f"Bearer {raw}").status_code
            == 200
        )


# --- CLI ------------------------------------------------------------------------------------


def quiet(*args: str) -> str:
    out = io.StringIO()
    call_command(*args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


@pytest.mark.django_db
def test_cli_writes_are_one_row_each_as_the_os_user_and_no_ops_none():
    quiet("import_omnia", str(V1))
    quiet("import_omnia", str(V1))  # nothing new: no row
    quiet("load_world", str(SCENARIO))
    quiet("load_world", str(SCENARIO))  # nothing new: no row
    quiet("run_projections")
    quiet("run_projections")  # nothing to fold: no row
    quiet("rebuild_projections")
    quiet("rebuild_projections", "--verify")  # writes nothing: no row
    actions = [(action, actor, label) for action, _target, actor, label in rows()]
    assert actions == [
        ("world.import", None, CLI),
        ("world.load", None, CLI),
        ("projections.cycle", None, CLI),
        ("projections.rebuild", None, CLI),  # one per save: the tavern and the scenario
        ("projections.rebuild", None, CLI),
    ]
    first = AuditLog.objects.order_by("id").first()
    assert first.target == f"save:{V1.stem}"
    assert json.loads(first.after_json)["inserted"]["buffer_entries"] == 36


def test_a_command_writing_through_services_is_audited_as_the_os_user(cast):
    """The helper a CLI door uses: services take audit.cli_actor() where a page passes its
    account, so an alias command's row names "cli:<os user>"."""
    from memory import services
    from memory.engine import audit
    from memory.models import AliasChange

    services.set_alias("alice", "bob", "the stranger", user=audit.cli_actor(), source="cli")
    services.set_alias("alice", "bob", "the stranger", user=audit.cli_actor(), source="cli")
    assert rows() == [("alias.set", "alice->bob", None, CLI)]
    assert AliasChange.objects.filter(source="cli").count() == 1


@pytest.mark.django_db
def test_ensure_login_is_one_row_each_naming_the_role_never_the_password():
    quiet("ensure_login", "--username", "qa", "--password", "s3cret-pw", "--role", "reader")
    quiet("ensure_login", "--username", "qa", "--password", "s3cret-pw", "--role", "editor")
    assert rows() == [("login.create", "qa", None, CLI), ("login.reset", "qa", None, CLI)]
    assert [json.loads(a.after_json) for a in AuditLog.objects.order_by("id")] == [
        {"role": "reader"},
        {"role": "editor"},
    ]
    assert not AuditLog.objects.filter(after_json__contains="s3cret").exists()
