"""Who is asking and may they: a login session or `Authorization: Bearer <token>`, and the
permission check every page and API operation applies (the permissions live in memory/roles.py).

Tokens are made in memory/tokens.py and stored only as their sha256 (ApiToken.key_hash).
Reading never writes, so a read does not touch `last_used_at`.
"""

from __future__ import annotations

from functools import wraps
from typing import Any

from django.contrib.auth.views import redirect_to_login
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils import timezone
from ninja.security import HttpBearer, django_auth

from memory.engine.errors import Forbidden
from memory.engine.knowledge import Viewer, get_viewer
from memory.models import ApiToken
from memory.roles import READ_PERMISSION, refusal
from memory.tokens import hash_token


class BearerToken(HttpBearer):
    def authenticate(self, request: HttpRequest, token: str):
        if not token:
            return None
        found = ApiToken.objects.select_related("user").filter(key_hash=hash_token(token)).first()
        if found is None or not found.user.is_active:
            return None
        if found.expires_at is not None and found.expires_at <= timezone.now():
            return None  # an expired token is no token: 401, as an unknown one
        return found.user


# Tried in order: a token header first, else the browser's session (CSRF-checked on writes).
API_AUTH = [BearerToken(), django_auth]


def user_of(request: HttpRequest):
    """The authenticated user, whichever way they came in."""
    auth = getattr(request, "auth", None)
    if auth is not None and getattr(auth, "is_authenticated", False):
        return auth
    return request.user


def require_permission(user: Any, permission: str, what: str) -> None:
    """Refuse (Forbidden) unless `user` holds `permission`; `what` starts the message, which
    ends with the role: require_permission(u, EDIT_PERMISSION, "writes need")."""
    if not user.has_perm(permission):
        raise Forbidden(refusal(permission, what))


def get_viewer_for_user(user: Any, viewer_id: str) -> Viewer:
    """The viewer named in a URL, if `user` may read (Forbidden) and it exists (NotFound)."""
    require_permission(user, READ_PERMISSION, "reads need")
    return get_viewer(viewer_id)


def docs_login_required(view):
    """The API's schema and docs pages for signed-in accounts only (they map the whole
    surface): the docs page sends a stranger to sign in, the schema answers 401 in the
    error shape."""

    @wraps(view)
    def guarded(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if request.user.is_authenticated:
            return view(request, *args, **kwargs)
        if request.path.endswith(".json"):
            body = {
                "detail": "log in to read the API schema",
                "code": "unauthorized",
                "field": None,
            }
            return JsonResponse(body, status=401)
        return redirect_to_login(request.get_full_path())

    return guarded
