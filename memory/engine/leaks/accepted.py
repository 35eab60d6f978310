"""Findings an editor accepted as expected (PRODUCT §7, issue 15 item 6).

An acceptance is kept by what a person recognises a finding by: the viewer, the prompt
section, the kind and the text. It lives apart from the stored findings, so a rescan (which
rewrites those) never loses it, and it applies as long as a finding with that key is found;
a finding whose text, kind or section changes is a new finding, open again.
"""

from __future__ import annotations

from collections.abc import Iterable

from django.db import IntegrityError, transaction

from memory.engine.errors import Conflict, InvalidInput, NotFound
from memory.engine.leaks.world_scan import ScanFinding
from memory.models import LeakAcceptance

Key = tuple[str, str, str, str]  # viewer id, section, kind, text

MAX_REASON = 2000
ID_CHUNK = 500


def acceptances(viewer_ids: Iterable[str] | None = None) -> dict[Key, LeakAcceptance]:
    """Every acceptance (of these viewers), by finding key."""
    rows = LeakAcceptance.objects.select_related("accepted_by")
    wanted = None if viewer_ids is None else set(viewer_ids)
    if wanted is not None and len(wanted) <= ID_CHUNK:
        found = list(rows.filter(viewer_id__in=sorted(wanted)))
    else:
        # Acceptances are few (each is an editor's act): one read of them all beats a long
        # list of ids in chunks, and the overview asks for every viewer.
        found = [a for a in rows if wanted is None or a.viewer_id in wanted]
    return {(a.viewer_id, a.section, a.kind, a.text): a for a in found}


def split(
    findings: Iterable[ScanFinding], accepted: dict[Key, LeakAcceptance]
) -> tuple[list[ScanFinding], list[ScanFinding]]:
    """(open findings, accepted findings)."""
    open_, done = [], []
    for f in findings:
        (done if f.key in accepted else open_).append(f)
    return open_, done


def accept(finding: ScanFinding | None, key: Key, reason: str, *, user=None) -> LeakAcceptance:
    """Accept the finding `key` names (it must be among the viewer's current findings, passed
    as `finding`); a reason is required."""
    reason = (reason or "").strip()
    if not reason:
        raise InvalidInput("a reason is required to accept a finding", field="reason")
    if len(reason) > MAX_REASON:
        raise InvalidInput(f"the reason is longer than {MAX_REASON} characters", field="reason")
    if finding is None:
        viewer_id, section, kind, text = key
        raise NotFound(
            f"no {kind} finding {text!r} in the {section!r} section of {viewer_id}'s prompt",
            field="text",
        )
    actor = user if getattr(user, "is_authenticated", False) else None
    try:
        with transaction.atomic():
            return LeakAcceptance.objects.create(
                viewer_id=key[0],
                section=key[1],
                kind=key[2],
                text=key[3],
                reason=reason,
                accepted_by=actor,
            )
    except IntegrityError:
        raise Conflict("this finding is already accepted", field="text") from None


def reopen(key: Key) -> LeakAcceptance:
    """Withdraw the acceptance of `key`: the finding counts as a leak again."""
    found = LeakAcceptance.objects.filter(
        viewer_id=key[0], section=key[1], kind=key[2], text=key[3]
    ).first()
    if found is None:
        raise NotFound("this finding is not accepted", field="text")
    found.delete()
    return found
