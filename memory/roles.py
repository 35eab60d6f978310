"""Roles as Django groups (readers, editors, admins) and the permission each action needs.

- readers: every page and read API (QA, designers).
- editors: readers + aliases, retract, remember, abstract, run or verify a projection cycle.
- admins: everything, including rebuild.

Authorization is Django's permissions, carried by the groups (migration 0004 gave them these
sets): code asks `user.has_perm(EDIT_PERMISSION)`, never a group name. Two roles come with an
account's flags rather than a group, answered by RoleBackend: every active account is a reader
(pages were always open to any signed-in account), and a staff account is an admin (the older
"staff may write" rule). Superusers hold every permission, as Django has it.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend
from django.http import HttpRequest
from django.utils.functional import SimpleLazyObject

from memory.active_save import instances

READERS = "readers"
EDITORS = "editors"
ADMINS = "admins"
ROLES = (READERS, EDITORS, ADMINS)

# Model permissions each group carries (app_label.codename), as migration 0004 froze them.
_READ_MODELS = (
    "worldobject",
    "attribute",
    "bufferentry",
    "memorysession",
    "episode",
    "aliaschange",
    "auditlog",
)
READER_PERMISSIONS = tuple(f"memory.view_{m}" for m in _READ_MODELS)
EDITOR_PERMISSIONS = READER_PERMISSIONS + (
    "memory.change_worldobject",
    "memory.add_aliaschange",
    "memory.change_bufferentry",
    "memory.add_bufferentry",
)
ADMIN_PERMISSIONS = EDITOR_PERMISSIONS + (
    "memory.change_memorysession",
    "memory.delete_memorysession",
    "memory.change_episode",
    "memory.delete_episode",
    "memory.add_apitoken",
    "memory.view_apitoken",
    "memory.delete_apitoken",
    # Leak acceptances in the admin, read-only (they are made and withdrawn on /leaks/).
    "memory.view_leakacceptance",
)

# The permission each kind of action needs; each is the one that sets its role apart.
READ_PERMISSION = "memory.view_worldobject"  # every page and read API
EDIT_PERMISSION = "memory.change_worldobject"  # aliases, remember, retract, abstract, cycle
ADMIN_PERMISSION = "memory.delete_memorysession"  # rebuild: every projection row re-made

_ROLE_NEEDED = {READ_PERMISSION: "reader", EDIT_PERMISSION: "editor", ADMIN_PERMISSION: "admin"}


def refusal(permission: str, what: str) -> str:
    """The words for a refused action: they name the role, e.g. "writes need the editor role"."""
    return f"{what} the {_ROLE_NEEDED[permission]} role"


def role_of(user: Any) -> str | None:
    """The strongest role, for display: 'admins', 'editors', 'readers', or None."""
    for role, permission in ((ADMINS, ADMIN_PERMISSION), (EDITORS, EDIT_PERMISSION)):
        if user.has_perm(permission):
            return role
    return READERS if user.has_perm(READ_PERMISSION) else None


_ROLE_NAME = {ADMINS: "admin", EDITORS: "editor", READERS: "reader"}


def role_context(request: HttpRequest) -> dict[str, Any]:
    """Template context processor: `role`, the signed-in user's role in words ("editor").
    Lazy, so a page that never shows it never asks."""
    user = getattr(request, "user", None)
    return {"role": SimpleLazyObject(lambda: _ROLE_NAME.get(role_of(user), "") if user else "")}


class RoleBackend(ModelBackend):
    """ModelBackend, plus the permissions an account holds by its flags: an active account
    has the readers', a staff account the admins'. Answered from these lists, without a
    query, so a staff token's write costs no more round trips than a superuser's."""

    def _by_flags(self, user_obj: Any, obj: Any) -> frozenset[str]:
        if obj is not None or not user_obj.is_active or user_obj.is_anonymous:
            return frozenset()
        return frozenset(ADMIN_PERMISSIONS if user_obj.is_staff else READER_PERMISSIONS)

    def get_all_permissions(self, user_obj: Any, obj: Any = None) -> set[str]:
        return super().get_all_permissions(user_obj, obj) | self._by_flags(user_obj, obj)

    def has_perm(self, user_obj: Any, perm: str, obj: Any = None) -> bool:
        return perm in self._by_flags(user_obj, obj) or super().has_perm(user_obj, perm, obj)

    def get_user(self, user_id: Any) -> Any:
        """ModelBackend.get_user, its read raw: every request of a signed-in person reads its
        user here, and the ORM built the statement in longer than the database answered it
        (0.52-0.63 ms against 0.29-0.31 on PostgreSQL, medians of 400). The same instance
        (active_save.instances converts each column as the ORM does); None for no such
        active user."""
        model = get_user_model()
        found = instances(model, f"{model._meta.pk.column} = %s", [user_id])
        if not found:
            return None
        user = found[0]
        return user if self.user_can_authenticate(user) else None
