"""API authentication: a login session or `Authorization: Bearer <token>`; roles for writes.

Who may do what lives in memory/roles.py; the helpers here apply it to a request, whichever
way its user came in.

Tokens are stored only as their sha256 (ApiToken.key_hash). Reading never writes, so a read
does not touch `last_used_at`.
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Callable
from functools import wraps
from typing import Any

from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from ninja.security import HttpBearer, django_auth

from memory.models import ApiToken
from memory.web import roles

TOKEN_PREFIX_LEN = 8


def hash_token(raw: str) -> str:
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()


def issue_token(user, name: str) -> tuple[ApiToken, str]:
    """Create a token for `user`; the raw value is returned once and never stored."""
    raw = "omi_" + secrets.token_urlsafe(32)
    token = ApiToken.objects.create(
        user=user, name=name, prefix=raw[:TOKEN_PREFIX_LEN], key_hash=hash_token(raw)
    )
    return token, raw


class BearerToken(HttpBearer):
    def authenticate(self, request: HttpRequest, token: str):
        if not token:
            return None
        found = ApiToken.objects.select_related("user").filter(key_hash=hash_token(token)).first()
        if found is None or not found.user.is_active:
            return None
        return found.user


# Tried in order: a token header first, else the browser's session (CSRF-checked on writes).
API_AUTH = [BearerToken(), django_auth]


def user_of(request: HttpRequest):
    """The authenticated user, whichever way they came in."""
    auth = getattr(request, "auth", None)
    if auth is not None and getattr(auth, "is_authenticated", False):
        return auth
    return request.user


def can_read(request: HttpRequest) -> bool:
    return roles.can_read(user_of(request))


def can_edit(request: HttpRequest) -> bool:
    return roles.can_edit(user_of(request))


def can_admin(request: HttpRequest) -> bool:
    return roles.can_admin(user_of(request))


def is_staff(request: HttpRequest) -> bool:
    """May this request write? Kept under its old name for the API: staff are admins, and
    editors may now write too (roles.can_edit)."""
    return can_edit(request)


def _role_required(check: Callable[[Any], bool]) -> Callable:
    # For page views, after login_required: a signed-in user without the role gets 403.
    def decorator(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
        @wraps(view)
        def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            if not check(request.user):
                raise PermissionDenied("your role does not allow this")
            return view(request, *args, **kwargs)

        return wrapped

    return decorator


editor_required = _role_required(roles.can_edit)
admin_required = _role_required(roles.can_admin)
