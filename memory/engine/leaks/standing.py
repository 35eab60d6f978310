"""Where each viewer's stored leak findings stand, as the pages read it (PRODUCT §7, §10).

A viewer's findings are *current* when its scan row says so (`LeakScan.stale` false) and
*behind* otherwise (a write since, or never scanned: no row). Every door that changes what a
prompt reads keeps that flag in its own transaction (`LeakScan.objects.mark_stale`: a write
for an owner bumps its generation and marks it, an alias edit marks and rescans its viewer, the
fold marks the owners whose digest moved, the live follower marks the whole save when the
world's small tables change; an import or a rebuild starts with no rows). So a page learns who
is behind from one read of the flags, and reads the findings and open counts of the current
viewers one statement each, never recomputing every viewer's inputs (stored.input_fingerprints,
which the rescan still compares: a door that forgot its mark is rescanned at the next cycle).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from django.db.models import Count, Exists, OuterRef, QuerySet

from memory.engine.knowledge import AGENTS
from memory.engine.leaks.stored import _finding_of
from memory.engine.leaks.world_scan import ScanFinding
from memory.models import LeakAcceptance, LeakFinding, LeakScan, ObjectType, WorldObject


def _viewers(viewer_id: str | None) -> QuerySet:
    """Unasked, the agents (the prompts a scan reads); asked by id, that entity."""
    entities = WorldObject.objects.filter(type=ObjectType.ENTITY)
    return entities.filter(id=viewer_id) if viewer_id is not None else entities.filter(AGENTS)


def _current_scan(viewer=None) -> Exists:
    return Exists(LeakScan.objects.filter(viewer_id=viewer or OuterRef("id"), stale=False))


@dataclass(frozen=True)
class Standing:
    current: int  # viewers whose stored findings are current
    behind: list[str]  # the others, by id: not scanned since a write, or never

    @property
    def viewers(self) -> int:
        return self.current + len(self.behind)


def standing(viewer_id: str | None = None) -> Standing:
    """How many viewers (of the agents, or the one asked) have current findings, and which
    are behind: two reads of the objects' index and the scan rows, ids only for those behind."""
    viewers = _viewers(viewer_id)
    # Sorted here: ORDER BY id would walk the (save, id) index through every row.
    behind = sorted(viewers.filter(~_current_scan()).order_by().values_list("id", flat=True))
    return Standing(current=viewers.filter(_current_scan()).count(), behind=behind)


def current_viewers(viewer_id: str | None = None) -> list[str]:
    """The viewers whose findings are current, by id (every one of them: for a few)."""
    return sorted(
        _viewers(viewer_id).filter(_current_scan()).order_by().values_list("id", flat=True)
    )


def _current_findings(viewer_id: str | None) -> QuerySet:
    """The stored findings of the viewers whose scan is current (of the agents, or the one
    asked), as a set: the two conditions are checked per finding, never as a list of ids."""
    return LeakFinding.objects.filter(
        _current_scan(OuterRef("viewer_id")),
        Exists(_viewers(viewer_id).filter(id=OuterRef("viewer_id"))),
    )


def current_findings(viewer_id: str | None = None) -> dict[str, list[ScanFinding]]:
    """viewer -> its stored findings in its scanner's order, for each current viewer that has
    any (the rest have none)."""
    found: dict[str, list[ScanFinding]] = {}
    for row in _current_findings(viewer_id).order_by("viewer_id", "ordinal"):
        found.setdefault(row.viewer_id, []).append(_finding_of(row))
    return found


def open_counts(viewer_id: str | None = None) -> dict[str, Counter[str]]:
    """viewer -> kind -> its stored findings no editor accepted, for each current viewer with
    one at least: counted by the database, a row per (viewer, kind)."""
    accepted = LeakAcceptance.objects.filter(
        viewer_id=OuterRef("viewer_id"),
        section=OuterRef("section"),
        kind=OuterRef("kind"),
        text=OuterRef("text"),
    )
    rows = (
        _current_findings(viewer_id)
        .exclude(Exists(accepted))
        .values_list("viewer_id", "kind")
        .annotate(n=Count("*"))
        .order_by()
    )
    counts: dict[str, Counter[str]] = {}
    for viewer, kind, n in rows:
        counts.setdefault(viewer, Counter())[kind] = n
    return counts
