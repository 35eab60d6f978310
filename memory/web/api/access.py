"""Who may call an operation: the request's user (session or token) and the permission the
operation needs (memory/roles.py). Refusals are domain errors, mapped to 403/404 by errors.py."""

from __future__ import annotations

from django.http import HttpRequest

from memory import inputs
from memory.engine.knowledge import Viewer
from memory.roles import ADMIN_PERMISSION, EDIT_PERMISSION, READ_PERMISSION
from memory.web.auth import get_viewer_for_user, require_permission, user_of


def viewer(request: HttpRequest, viewer_id: str) -> Viewer:
    """The viewer named in the path, for a user who may read."""
    return get_viewer_for_user(user_of(request), inputs.path_id(viewer_id, "viewer_id"))


def require_editor(request: HttpRequest) -> None:
    require_permission(user_of(request), EDIT_PERMISSION, "writes need")


def require_admin(request: HttpRequest) -> None:
    require_permission(user_of(request), ADMIN_PERMISSION, "a rebuild needs")


def require_reader(request: HttpRequest) -> None:
    require_permission(user_of(request), READ_PERMISSION, "reads need")
