"""The audit row every effective write leaves, whichever door it came through (pages, API,
admin, management commands): one place, so every door words its actor the same way.

An actor is an account (a web or admin user) or, where no account acts, a label: a
management command is "cli:<os user>". A write that changed nothing records nothing.
"""

from __future__ import annotations

import getpass
import json
from typing import Any

from memory.models import AuditLog


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


def record_import(action: str, report: Any, actor: Any) -> AuditLog | None:
    """The audit row of an import or load (an ImportReport): the save it made or replaced;
    none for the same file again (nothing was written)."""
    if report.unchanged:
        return None
    return record(
        action,
        f"save:{report.save}",
        actor=actor,
        after={
            "source": report.source,
            "era": report.era,
            "worlds": report.worlds,
            "inserted": report.counts,
            "replaced": report.replaced,
            "kept": report.kept,
            "dropped": report.dropped,
        },
    )
