"""Roles as Django groups: readers, editors, admins.

- readers: every page and read API (QA, designers).
- editors: readers + aliases, retract, remember, abstract, run a projection cycle.
- admins: everything, including rebuild.

Roles nest (an admin can edit, an editor can read). Any active signed-in account may read:
pages are behind login_required and nothing more, so a user without a group is a reader;
the readers group exists so the admin can name the role and grant view permissions.
Superusers and staff count as admins, which keeps the older "staff may write" rule working.
"""

from __future__ import annotations

from typing import Any

READERS = "readers"
EDITORS = "editors"
ADMINS = "admins"
ROLES = (READERS, EDITORS, ADMINS)

# Model permissions each group carries (app_label.codename); used by migration 0004.
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
)
GROUP_PERMISSIONS: dict[str, tuple[str, ...]] = {
    READERS: READER_PERMISSIONS,
    EDITORS: EDITOR_PERMISSIONS,
    ADMINS: ADMIN_PERMISSIONS,
}


def _active(user: Any) -> bool:
    return bool(
        user is not None
        and getattr(user, "is_authenticated", False)
        and getattr(user, "is_active", False)
    )


def group_names(user: Any) -> frozenset[str]:
    """The user's role groups, read once per user object (cached on it, like Django's perms)."""
    if not _active(user) or not getattr(user, "pk", None):
        return frozenset()
    cached = getattr(user, "_omnia_roles", None)
    if cached is None:
        cached = frozenset(user.groups.filter(name__in=ROLES).values_list("name", flat=True))
        user._omnia_roles = cached
    return cached


def can_admin(user: Any) -> bool:
    if not _active(user):
        return False
    if user.is_superuser or user.is_staff:
        return True
    return ADMINS in group_names(user)


def can_edit(user: Any) -> bool:
    if not _active(user):
        return False
    return can_admin(user) or EDITORS in group_names(user)


def can_read(user: Any) -> bool:
    return _active(user)


def role_of(user: Any) -> str | None:
    """The strongest role, for display: 'admins', 'editors', 'readers', or None (anonymous)."""
    if can_admin(user):
        return ADMINS
    if can_edit(user):
        return EDITORS
    if can_read(user):
        return READERS
    return None
