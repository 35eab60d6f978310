"""The audit row every effective write leaves, whichever door it came through (pages, API,
admin, management commands): one place, so every door words its actor the same way.

An actor is an account (a web or admin user) or, where no account acts, a label: a
management command is "cli:<os user>". A write that changed nothing records nothing.
"""

from __future__ import annotations

import getpass
import hashlib
import json
from typing import Any

from memory.models import Attribute, AttributeAcl, AuditLog


def cli_actor() -> str:
    """The actor label of a management command: "cli:<the OS user running it>"."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):  # no passwd entry and no LOGNAME/USER (a bare container)
        user = "unknown"
    return f"cli:{user}"


def _json(value: Any) -> str | None:
    return None if value is None else json.dumps(value, default=str)


def record(
    action: str,
    target: str,
    *,
    actor: Any = None,
    before: Any = None,
    after: Any = None,
) -> AuditLog:
    """Write one audit row. `actor` is a user (anonymous counts as none) or a label string;
    `before`/`after` are stored as JSON."""
    if isinstance(actor, str):
        user, label = None, actor
    elif getattr(actor, "is_authenticated", False):
        user, label = actor, ""
    else:
        user, label = None, ""
    return AuditLog.objects.create(
        actor=user,
        actor_label=label,
        action=action,
        target=target,
        before_json=_json(before),
        after_json=_json(after),
    )


def cycle_changed(result: Any) -> bool:
    """Whether a projection cycle (a CycleResult) wrote anything: one that found nothing to
    fold is a no-op and is not audited."""
    return any(
        getattr(result, name, 0)
        for name in (
            "rows_folded",
            "sessions_written",
            "episodes_written",
            "episodes_closed",
            "leak_findings_written",
        )
    )


# Tables a loader re-states whole on every import (its report counts them as inserted even
# when every row is as it was), so their count alone does not say the store changed.
RESTATED = frozenset({"attributes", "attribute_acl"})


def restated_digest() -> str:
    """A digest of the re-stated tables' content, to tell a re-import that changed an
    attribute from one that wrote every attribute back as it was."""
    digest = hashlib.sha256()
    for row in Attribute.objects.order_by("object_id", "name").values_list(
        "object_id", "name", "value", "visibility"
    ):
        digest.update(json.dumps(row).encode())
    digest.update(b"|acl|")
    for row in AttributeAcl.objects.order_by(
        "object_id", "attribute_name", "entity_id"
    ).values_list("object_id", "attribute_name", "entity_id"):
        digest.update(json.dumps(row).encode())
    return digest.hexdigest()


def record_import(
    action: str, report: Any, actor: Any, *, digest_before: str | None = None
) -> AuditLog | None:
    """The audit row of an import or load (an ImportReport); none when it changed nothing:
    no new row, and the re-stated tables as they were (`digest_before`, restated_digest()
    taken before the load)."""
    inserted = {t: n for t, n in report.counts.items() if n and t not in RESTATED}
    restated = any(n for t, n in report.counts.items() if t in RESTATED)
    if not inserted and not (restated and digest_before != restated_digest()):
        return None
    return record(
        action,
        report.source,
        actor=actor,
        after={"era": report.era, "worlds": report.worlds, "inserted": report.counts},
    )
