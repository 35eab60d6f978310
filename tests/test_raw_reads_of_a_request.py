"""The two reads every signed-in request makes first, raw (memory/web/sessions.py, RoleBackend
.get_user): the same session data and the same user as Django's own reads, and the same
refusals (an expired or unknown session, an unknown or inactive user)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth.backends import ModelBackend
from django.contrib.sessions.backends.db import SessionStore as DjangoStore
from django.contrib.sessions.models import Session
from django.utils import timezone

from memory.roles import RoleBackend
from memory.web.sessions import SessionStore

pytestmark = pytest.mark.django_db


def test_a_session_reads_as_djangos_store_reads_it() -> None:
    store = SessionStore()
    store.update({"who": "designer", "n": 3, "text": '<script>"x"</script>'})
    store.create()
    key = store.session_key
    assert (
        SessionStore(key).load()
        == DjangoStore(key).load()
        == {
            "who": "designer",
            "n": 3,
            "text": '<script>"x"</script>',
        }
    )
    Session.objects.filter(session_key=key).update(
        expire_date=timezone.now() - timedelta(seconds=1)
    )
    expired = SessionStore(key)
    assert expired.load() == {} == DjangoStore(key).load()
    assert expired.session_key is None  # forgotten, as Django forgets it
    assert SessionStore("no-such-session-key").load() == {}


def _fields(user) -> dict:
    return {k: v for k, v in vars(user).items() if k != "_state"}


def test_a_user_reads_as_the_model_backend_reads_it(django_user_model) -> None:
    user = django_user_model.objects.create_user(
        "designer", "d@example.org", "pw-not-checked", first_name="Dée", is_staff=True
    )
    user.last_login = timezone.now()
    user.save()
    raw, orm = RoleBackend().get_user(user.pk), ModelBackend().get_user(user.pk)
    assert type(raw) is type(orm) and _fields(raw) == _fields(orm)
    assert raw.last_login == user.last_login and raw.is_staff is True
    assert RoleBackend().get_user(user.pk + 1000) is None
    django_user_model.objects.filter(pk=user.pk).update(is_active=False)
    assert RoleBackend().get_user(user.pk) is None is ModelBackend().get_user(user.pk)
