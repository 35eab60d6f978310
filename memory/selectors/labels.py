"""Stored labels worth a second look across a whole save (issue 28 item 5): the save page's
list and `scan_leaks`' count."""

from __future__ import annotations

from dataclasses import dataclass

from memory.active_save import scoped_cursor
from memory.engine.knowledge import every_name_owner
from memory.engine.leaks import labels
from memory.engine.leaks.standing import CURRENT_SCAN
from memory.engine.newest import chunks
from memory.models import LeakScan, ObjectType, WorldObject


@dataclass(frozen=True)
class SuspiciousLabel:
    viewer_id: str
    target_id: str
    label: str
    reasons: tuple[str, ...]  # aliases.label_suspicions, in words


_OBJECTS, _SCANS = WorldObject._meta.db_table, LeakScan._meta.db_table
# What an entity without labels holds in aliases_json (or NULL).
EMPTY_ALIASES = ("", "[]", "{}")
# The viewers whose current scan found labels to look at, with what it found ('[]' is the
# column's default: nothing).
_KEPT = (
    f"SELECT s.viewer_id, s.labels_json FROM {_SCANS} s JOIN {_OBJECTS} o "
    "ON o.game_save_id = s.game_save_id AND o.id = s.viewer_id "
    "WHERE s.game_save_id = %(save)s AND o.type = %s AND NOT s.stale AND s.labels_json <> '[]'"
)
# The entities that no current scan has looked at (a write since, never scanned: an import
# before its first cycle, or no agent), on the entities' index alone; then the labels of those
# few. Asking for the labels in the same statement read every entity's row (an aliases_json
# of kilobytes each): 2.7 ms on PostgreSQL against 1.3.
_UNSCANNED = (
    f"SELECT o.id FROM {_OBJECTS} o WHERE o.game_save_id = %(save)s AND o.type = %s AND NOT "
    + CURRENT_SCAN.format(save="o.game_save_id", viewer="o.id")
)


def suspicious_labels() -> list[SuspiciousLabel]:
    """Every stored label of the active save worth a second look (empty, over-long, another
    entity's true name), by viewer then target in its alias map's order: what each viewer's
    current leak scan kept (leaks.labels), and for the viewers no current scan covers, their
    labels checked now. On a scanned save that is a read of a few rows."""
    entity = ObjectType.ENTITY.value
    with scoped_cursor() as cursor:
        cursor.execute(_KEPT, [entity])
        found = {viewer: labels.from_json(text) for viewer, text in cursor.fetchall()}
        cursor.execute(_UNSCANNED, [entity])
        ids = [row[0] for row in cursor.fetchall()]
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
