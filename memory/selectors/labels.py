"""Stored labels worth a second look across a whole save (issue 28 item 5): the save page's
list and `scan_leaks`' count."""

from __future__ import annotations

from dataclasses import dataclass

from memory.engine.knowledge import every_name_owner
from memory.engine.leaks import labels
from memory.engine.leaks.standing import Board, read_board
from memory.engine.newest import chunks
from memory.models import WorldObject


@dataclass(frozen=True)
class SuspiciousLabel:
    viewer_id: str
    target_id: str
    label: str
    reasons: tuple[str, ...]  # aliases.label_suspicions, in words


# What an entity without labels holds in aliases_json (or NULL).
EMPTY_ALIASES = ("", "[]", "{}")


def suspicious_labels(board: Board | None = None) -> list[SuspiciousLabel]:
    """Every stored label of the active save worth a second look (empty, over-long, another
    entity's true name), by viewer then target in its alias map's order: what each viewer's
    current leak scan kept (leaks.labels), and for the viewers no current scan covers, their
    labels checked now. On a scanned save that is a read of the entities' board (`board`,
    when the page has read it)."""
    rows = (board or read_board()).rows  # every entity, with its scan row's state
    # What each current scan kept ('[]', the column's default, is nothing: read as None).
    found = {
        r.viewer_id: labels.from_json(r.labels_json) for r in rows if r.current and r.labels_json
    }
    # The entities no current scan has looked at (a write since, never scanned: an import
    # before its first cycle, or no agent): their labels checked now (a few).
    ids = [r.viewer_id for r in rows if not r.current]
    unscanned = [
        (viewer, text)
        for chunk in chunks(ids, 500)
        for viewer, text in WorldObject.objects.filter(id__in=list(chunk))
        .exclude(aliases_json__in=EMPTY_ALIASES)
        .exclude(aliases_json=None)
        .values_list("id", "aliases_json")
    ]
    if unscanned:
        owners = every_name_owner()
        for viewer, text in unscanned:
            found[viewer] = labels.suspicious_of(viewer, text, owners)
    return [
        SuspiciousLabel(viewer, s.target_id, s.label, s.reasons)
        for viewer in sorted(found)
        for s in found[viewer]
    ]
