"""API tokens: a fresh secret for a token, and its hash. The raw value is returned once and
never stored; the store keeps its prefix (to tell tokens apart) and its sha256. The admin
makes them, the web checks them (memory/web/auth.py)."""

from __future__ import annotations

import hashlib
import secrets

from memory.models import ApiToken

TOKEN_PREFIX_LEN = 8


def hash_token(raw: str) -> str:
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()


def new_token(token: ApiToken) -> str:
    """Give `token` a fresh secret (prefix and hash, unsaved); the raw value is returned once
    and never stored."""
    raw = "omi_" + secrets.token_urlsafe(32)
    token.prefix, token.key_hash = raw[:TOKEN_PREFIX_LEN], hash_token(raw)
    return raw


def issue_token(user, name: str) -> tuple[ApiToken, str]:
    """Create a token for `user`; the raw value is returned once and never stored."""
    token = ApiToken(user=user, name=name)
    raw = new_token(token)
    token.save()
    return token, raw
