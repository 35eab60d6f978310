"""Access control: roles as groups (readers, editors, admins), anonymous refused on every route
of the URLconf, readers cannot write, editors can, one audit row per write, CSRF on form
posts, and login throttling."""

from __future__ import annotations

import re

from axes.models import AccessAttempt
from django.conf import settings
from django.contrib.auth.models import AnonymousUser, Group
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver

from memory import roles
from memory.models import AuditLog
from memory.tokens import issue_token
from memory.web.lockout import THROTTLED_MESSAGE
from tests.helpers import CHEST

MAX_FAILURES = settings.AXES_FAILURE_LIMIT
WINDOW_SECONDS = int(settings.AXES_COOLOFF_TIME.total_seconds())

# Public on purpose: the sign-in pages and /healthz (counts only). The API root is a bare 404
# with no data. The API's schema and docs are not public (issue 14 item 11): they are
# refused to anonymous callers like every other route.
PUBLIC = {"accounts/login/", "accounts/logout/", "api/", "healthz"}


def user_in(django_user_model, name: str, *groups: str, **flags):
    user = django_user_model.objects.create_user(name, password="pw", **flags)
    for group in groups:
        user.groups.add(Group.objects.get(name=group))
    return user


def bearer(user) -> dict:
    return {"HTTP_AUTHORIZATION": f"Bearer {issue_token(user, 'ci')[1]}"}


# --- the permissions each role holds ----------------------------------------------------------------------------


def test_groups_exist_with_nested_permissions(db):
    found = {g.name: g for g in Group.objects.filter(name__in=roles.ROLES)}
    assert set(found) == set(roles.ROLES)
    perms = {
        name: {f"{p.content_type.app_label}.{p.codename}" for p in g.permissions.all()}
        for name, g in found.items()
    }
    assert perms[roles.READERS] == set(roles.READER_PERMISSIONS)
    assert perms[roles.READERS] < perms[roles.EDITORS] < perms[roles.ADMINS]


def test_role_permissions(db, django_user_model, reader, editor, admin, staff, root):
    plain = user_in(django_user_model, "plain")
    gone = user_in(django_user_model, "gone", roles.ADMINS, is_active=False)
    table = {
        "anonymous": (AnonymousUser(), (False, False, False)),
        "plain": (plain, (True, False, False)),
        "reader": (reader, (True, False, False)),
        "editor": (editor, (True, True, False)),
        "admin": (admin, (True, True, True)),
        "staff": (staff, (True, True, True)),
        "superuser": (root, (True, True, True)),
        "inactive": (gone, (False, False, False)),
    }
    needed = (roles.READ_PERMISSION, roles.EDIT_PERMISSION, roles.ADMIN_PERMISSION)
    for label, (user, expected) in table.items():
        got = tuple(user.has_perm(permission) for permission in needed)
        assert got == expected, label
    assert roles.role_of(editor) == roles.EDITORS
    assert roles.role_of(AnonymousUser()) is None


# --- anonymous: every route of the URLconf ------------------------------------------------------


def every_route(patterns=None, prefix: str = ""):
    for p in get_resolver().url_patterns if patterns is None else patterns:
        if isinstance(p, URLResolver):
            yield from every_route(p.url_patterns, prefix + str(p.pattern))
        elif isinstance(p, URLPattern):
            yield prefix + str(p.pattern).lstrip("^").rstrip("$")


def concrete(route: str, entry_id: str) -> str:
    values = {"viewer_id": "alice", "target_id": "bob", "entry_id": entry_id, "action": "cycle"}

    def fill(match: re.Match) -> str:
        # An int converter matches digits only: "x" would be no route at all (a 404).
        return values.get(match.group(2), "1" if match.group(1) == "int" else "x")

    return "/" + re.sub(r"<(?:(\w+):)?(\w+)>", fill, route)


def refused(response) -> bool:
    if response.status_code in (401, 403, 405):
        return True
    location = response.headers.get("Location", "")
    return response.status_code == 302 and "login" in location


def test_anonymous_is_refused_on_every_page_and_api_route(client, chest):
    routes = [r for r in every_route() if r not in PUBLIC and not r.startswith("admin/")]
    assert any(r.startswith("api/") for r in routes) and any(
        r.startswith("viewers/") for r in routes
    )
    leaks = []
    for route in routes:
        url = concrete(route, chest.id)
        for method in ("get", "post", "put", "delete"):
            response = getattr(client, method)(url)
            if not refused(response):
                leaks.append((method.upper(), url, response.status_code))
    assert leaks == []
    assert AuditLog.objects.count() == 0


def test_admin_site_refuses_anonymous(client, db):
    r = client.get("/admin/")
    assert r.status_code == 302 and "/admin/login/" in r["Location"]


# --- readers read, editors write ------------------------------------------------------------------


def test_reader_reads_every_read_route_but_cannot_write(client, chest, reader):
    auth = bearer(reader)
    assert client.get("/api/saves/cast/entities", **auth).status_code == 200
    assert client.get("/api/saves/cast/viewers/alice/buffer", **auth).status_code == 200
    writes = [
        client.post(
            "/api/saves/cast/viewers/alice/memories",
            {"intent": CHEST},
            content_type="application/json",
            **auth,
        ),
        client.put(
            "/api/saves/cast/viewers/alice/aliases/bob",
            {"label": "the stranger"},
            content_type="application/json",
            **auth,
        ),
        client.delete("/api/saves/cast/viewers/alice/aliases/bob", **auth),
        client.post(f"/api/saves/cast/memories/{chest.id}/retract", **auth),
        client.post("/api/saves/cast/projections/cycle", **auth),
        client.post("/api/saves/cast/projections/rebuild", **auth),
    ]
    assert [w.status_code for w in writes] == [403] * len(writes)
    assert {w.json()["code"] for w in writes} == {"forbidden"}
    client.force_login(reader)
    assert client.get("/saves/cast/viewers/alice/").status_code == 200
    page = client.post("/saves/cast/viewers/alice/aliases/bob/", {"label": "the stranger"})
    assert page.status_code == 403
    assert AuditLog.objects.count() == 0


def test_editor_writes_and_each_write_is_one_audit_row(client, chest, editor):
    auth = bearer(editor)
    before = AuditLog.objects.count()
    r = client.post(
        "/api/saves/cast/viewers/alice/memories",
        {"intent": CHEST},
        content_type="application/json",
        **auth,
    )
    assert r.status_code == 201, r.content
    assert AuditLog.objects.count() == before + 1
    r = client.put(
        "/api/saves/cast/viewers/alice/aliases/bob",
        {"label": "the stranger"},
        content_type="application/json",
        **auth,
    )
    assert r.status_code == 200, r.content
    assert AuditLog.objects.count() == before + 2
    r = client.post(f"/api/saves/cast/memories/{chest.id}/retract", **auth)
    assert r.status_code == 200, r.content
    assert AuditLog.objects.count() == before + 3
    r = client.delete("/api/saves/cast/viewers/alice/aliases/bob", **auth)
    assert r.status_code == 200, r.content
    assert AuditLog.objects.count() == before + 4
    assert client.post("/api/saves/cast/projections/cycle", **auth).status_code == 200
    # Rebuild is the admins' door.
    refused = client.post("/api/saves/cast/projections/rebuild", **auth)
    assert refused.status_code == 403
    assert refused.json()["detail"] == "a rebuild needs the admin role"
    writes = AuditLog.objects.filter(
        action__in=["memory.remember", "alias.set", "memory.retract", "alias.delete"]
    )
    assert writes.count() == 4
    assert set(writes.values_list("actor__username", flat=True)) == {"eddie"}
    client.force_login(editor)
    page = client.post("/saves/cast/viewers/alice/aliases/charlie/", {"label": "the barkeep"})
    assert page.status_code == 302, page.content
    assert page["Location"] == "/saves/cast/viewers/alice/aliases/"
    assert 'value="the barkeep"' in client.get(page["Location"]).content.decode()
    assert AuditLog.objects.filter(action="alias.set", target="alice->charlie").count() == 1


def test_admin_may_rebuild(client, chest, admin):
    assert client.post("/api/saves/cast/projections/rebuild", **bearer(admin)).status_code == 200


def test_staff_still_writes(client, chest, staff):
    r = client.post(
        "/api/saves/cast/viewers/alice/memories",
        {"intent": CHEST},
        content_type="application/json",
        **bearer(staff),
    )
    assert r.status_code == 201


def test_header_names_the_role_not_staff(client, cast, reader, editor, staff):
    for user, shown in (
        (reader, "rita (reader)"),
        (editor, "eddie (editor)"),
        (staff, "staff (admin)"),
    ):
        client.force_login(user)
        assert f'<span class="who">{shown}</span>' in client.get("/").content.decode()


def test_csrf_is_enforced_on_form_posts_and_session_api_writes(chest, editor):
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(editor)
    assert (
        browser.post(
            "/saves/cast/viewers/alice/aliases/bob/", {"label": "the stranger"}
        ).status_code
        == 403
    )
    r = browser.put(
        "/api/saves/cast/viewers/alice/aliases/bob",
        {"label": "the stranger"},
        content_type="application/json",
    )
    assert r.status_code == 403
    assert AuditLog.objects.count() == 0


# --- login throttling -------------------------------------------------------------------------------


ACCOUNT_LIMIT = settings.OMNIA_LOGIN_ACCOUNT_FAILURE_LIMIT
ADDRESS_ACCOUNTS = settings.OMNIA_LOGIN_ADDRESS_ACCOUNT_LIMIT


def test_throttle_policy_counts_account_address_and_sprayed_accounts_apart():
    assert (MAX_FAILURES, ACCOUNT_LIMIT, ADDRESS_ACCOUNTS, WINDOW_SECONDS) == (5, 20, 10, 900)
    assert settings.AXES_LOCKOUT_PARAMETERS == [
        ["username", "ip_address"],
        ["username"],
        ["ip_address"],
    ]


def test_one_accounts_failures_never_lock_out_another_account(client, reader, django_user_model):
    """Issue 14 item 9: five bad passwords for rita locked everyone at her address."""
    django_user_model.objects.create_user("bea", password="pw2")
    for _ in range(MAX_FAILURES * 3):
        client.post("/accounts/login/", {"username": "rita", "password": "wrong"})
    assert (
        client.post("/accounts/login/", {"username": "rita", "password": "pw"}).status_code == 429
    )
    # bea, from the same address, signs in.
    r = client.post("/accounts/login/", {"username": "bea", "password": "pw2"})
    assert r.status_code == 302
    assert "_auth_user_id" in client.session


def test_behind_a_trusted_proxy_each_client_is_counted_apart(reader, settings):
    settings.OMNIA_TRUSTED_PROXIES = ["10.9.0.0/16"]
    # Ten accounts sprayed from one client behind the proxy lock that client only.
    sprayer = Client(REMOTE_ADDR="10.9.0.1", HTTP_X_FORWARDED_FOR="203.0.113.7")
    for n in range(ADDRESS_ACCOUNTS):
        sprayer.post("/accounts/login/", {"username": f"guess{n}", "password": "wrong"})
    assert set(AccessAttempt.objects.values_list("ip_address", flat=True)) == {"203.0.113.7"}
    assert (
        sprayer.post("/accounts/login/", {"username": "rita", "password": "pw"}).status_code == 429
    )
    # Another client through the same proxy is not locked.
    other = Client(REMOTE_ADDR="10.9.0.1", HTTP_X_FORWARDED_FOR="198.51.100.2")
    assert other.post("/accounts/login/", {"username": "rita", "password": "pw"}).status_code == 302
    # A client that is not the proxy cannot choose its address with the header.
    direct = Client(REMOTE_ADDR="192.0.2.5", HTTP_X_FORWARDED_FOR="198.51.100.99")
    direct.post("/accounts/login/", {"username": "zed", "password": "wrong"})
    assert AccessAttempt.objects.filter(username="zed").get().ip_address == "192.0.2.5"


def test_failed_logins_are_counted_in_the_database_every_worker_reads(client, reader):
    client.post("/accounts/login/", {"username": "rita", "password": "wrong"})
    client.post("/accounts/login/", {"username": "RITA ", "password": "wrong"})  # same user
    # One row per username and client address, shared by every process on this database.
    rows = AccessAttempt.objects.values_list("username", "ip_address", "failures_since_start")
    assert list(rows) == [("rita", "127.0.0.1", 2)]


def test_login_is_throttled_after_repeated_failures(client, reader):
    for _ in range(MAX_FAILURES):
        r = client.post("/accounts/login/", {"username": "rita", "password": "wrong"})
        assert r.status_code == 200  # the form again, with its error
    # Throttled now: even the right password is not checked.
    r = client.post("/accounts/login/", {"username": "rita", "password": "pw"})
    assert r.status_code == 429
    assert r["Retry-After"] == str(WINDOW_SECONDS)
    assert r.context["throttled"] == THROTTLED_MESSAGE
    assert r.context["form"].non_field_errors() == [THROTTLED_MESSAGE]
    assert b'role="alert"' in r.content
    assert "_auth_user_id" not in client.session
    # Refused attempts are not counted: the pause does not grow with them.
    assert AccessAttempt.objects.get(username="rita").failures_since_start == MAX_FAILURES


def test_login_is_throttled_per_address_when_it_sprays_accounts(client, reader):
    for n in range(ADDRESS_ACCOUNTS - 1):
        client.post("/accounts/login/", {"username": f"guess{n}", "password": "wrong"})
    # Nine accounts: not yet.
    assert (
        client.post("/accounts/login/", {"username": "x", "password": "wrong"}).status_code == 200
    )
    r = client.post("/accounts/login/", {"username": "rita", "password": "pw"})
    assert r.status_code == 429
    assert "_auth_user_id" not in client.session
    # Another address may still sign in as rita: her own count is zero.
    other = Client(REMOTE_ADDR="10.0.0.2")
    assert other.post("/accounts/login/", {"username": "rita", "password": "pw"}).status_code == 302


def test_login_is_throttled_per_username_whatever_the_address(reader):
    for n in range(ACCOUNT_LIMIT):
        Client(REMOTE_ADDR=f"10.0.0.{n + 1}").post(
            "/accounts/login/", {"username": "rita", "password": "wrong"}
        )
    r = Client(REMOTE_ADDR="10.0.1.1").post(
        "/accounts/login/", {"username": "rita", "password": "pw"}
    )
    assert r.status_code == 429


def test_admin_login_is_throttled_too(client, reader):
    for _ in range(MAX_FAILURES):
        client.post("/admin/login/", {"username": "rita", "password": "wrong"})
    r = client.post("/admin/login/", {"username": "rita", "password": "pw"})
    assert r.status_code == 429
    assert r.context["form"].non_field_errors() == [THROTTLED_MESSAGE]
    assert THROTTLED_MESSAGE in r.content.decode()


def test_login_succeeds_below_the_limit_and_clears_the_count(client, reader):
    for _ in range(MAX_FAILURES - 1):
        client.post("/accounts/login/", {"username": "rita", "password": "wrong"})
    r = client.post("/accounts/login/", {"username": "rita", "password": "pw"})
    assert r.status_code == 302
    assert client.session["_auth_user_id"] == str(reader.pk)
    assert not AccessAttempt.objects.filter(username="rita").exists()


def test_a_login_forgives_only_its_own_usernames_failures(client, reader):
    for _ in range(MAX_FAILURES - 2):
        client.post("/accounts/login/", {"username": "rita", "password": "wrong"})
    client.post("/accounts/login/", {"username": "mallory", "password": "wrong"})
    r = client.post("/accounts/login/", {"username": "rita", "password": "pw"})
    assert r.status_code == 302
    # Holding one account does not reset the count of another guessed from the same address.
    rows = AccessAttempt.objects.values_list("username", "failures_since_start")
    assert list(rows) == [("mallory", 1)]
