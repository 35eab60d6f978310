"""API authentication: a login session or `Authorization: Bearer <token>`; roles for writes.

Tokens are stored only as their sha256 (ApiToken.key_hash). Reading never writes, so a read
does not touch `last_used_at`.
"""

from __future__ import annotations

import hashlib
import secrets

from django.http import HttpRequest
from ninja.security import HttpBearer, django_auth

from memory.models import ApiToken

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


def is_staff(request: HttpRequest) -> bool:
    user = user_of(request)
    return bool(getattr(user, "is_active", False) and getattr(user, "is_staff", False))
