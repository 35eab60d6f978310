"""The leak findings of every viewer: the report (page, exports, API) and the tallies the
overview and a save's page show. A viewer's prompt cut at its findings: prompt_view.py."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from django.db.models import Count, Sum

from memory.engine.knowledge import get_viewer
from memory.engine.leaks.accepted import acceptances
from memory.engine.leaks.scanner import reason_by_name
from memory.engine.leaks.standing import (
    Standing,
    current_finding_keys,
    current_findings,
    current_viewers,
    finding_counts,
    findings_by_key,
    open_counts,
    standing,
)
from memory.engine.leaks.stored import scan_fresh, stored_findings
from memory.engine.leaks.world_scan import FINDING_KINDS, ScanFinding
from memory.models import LeakScan, ObjectType, WorldObject
from memory.selectors.viewers import display_names

# A page rescans in memory at most this many viewers whose stored findings are behind (a
# just-loaded world, a write not yet folded); past it they are listed as pending, and the
# next projection cycle (run_projections) stores them. Reads never write.
FRESH_BUDGET = 50


@dataclass(frozen=True)
class LeakReport:
    findings: dict[str, list[ScanFinding]]  # viewer -> its findings (one with none: absent)
    known: int  # viewers whose findings are known: stored and current, or rescanned here
    pending: list[str]  # viewers whose findings are behind and were not rescanned


def _behind(viewer_id: str | None) -> tuple[Standing, dict[str, list[ScanFinding]], list[str]]:
    """Where the viewers stand, a fresh in-memory scan of the first FRESH_BUDGET of those
    behind, and the rest (pending)."""
    if viewer_id is not None:
        get_viewer(viewer_id)  # NotFound for an unknown id
    state = standing(viewer_id)
    rescanned, pending = state.behind[:FRESH_BUDGET], state.behind[FRESH_BUDGET:]
    fresh = scan_fresh(rescanned) if rescanned else {}
    return state, {v: fresh.get(v, []) for v in rescanned}, pending


def leak_report(viewer_id: str | None = None) -> LeakReport:
    """Stored findings for the viewers whose scan is current; a fresh in-memory scan for the
    few that are behind; the rest pending."""
    state, fresh, pending = _behind(viewer_id)
    findings = current_findings(viewer_id) if state.current else {}
    findings.update((v, found) for v, found in fresh.items() if found)
    return LeakReport(findings=findings, known=state.current + len(fresh), pending=pending)


SORTS = {
    "viewer": lambda f: (f["viewer_name"].casefold(), f["viewer_id"], f["start"]),
    "world": lambda f: (f["world_id"] or "", f["viewer_name"].casefold(), f["start"]),
    "kind": lambda f: (f["kind"], f["viewer_name"].casefold(), f["start"]),
    "count": lambda f: (-f["count"], f["viewer_name"].casefold(), f["start"]),
    "text": lambda f: (f["text"].casefold(), f["viewer_name"].casefold(), f["start"]),
    "state": lambda f: (f["state"], f["viewer_name"].casefold(), f["start"]),
}
SORT_NAMES = tuple(SORTS)
DEFAULT_SORT = "viewer"  # by the viewer's name, then where the leak stands in its prompt
ALIASABLE = ("unknown_name", "system_id")


def with_state(items: list[dict], found: Iterable[ScanFinding]) -> list[dict]:
    """Each finding's acceptance state, beside it (no query when there is nothing to mark)."""
    accepted = acceptances({f.viewer_id for f in found}) if items else {}
    for item in items:
        key = (item["viewer_id"], item["section"], item["kind"], item["text"])
        done = accepted.get(key)
        item["state"] = "accepted" if done else "open"
        item["accepted_reason"] = done.reason if done else None
        item["accepted_by"] = done.accepted_by.get_username() if done and done.accepted_by else None
        item["accepted_at"] = done.accepted_at.isoformat() if done else None
    return items


def _entities(ids: set[str]) -> set[str]:
    wanted = sorted(ids)
    found: set[str] = set()
    for start in range(0, len(wanted), 500):
        chunk = wanted[start : start + 500]
        found.update(
            WorldObject.objects.filter(id__in=chunk, type=ObjectType.ENTITY).values_list(
                "id", flat=True
            )
        )
    return found


def viewer_choices(
    selected: str | None = None, listed: Iterable[str] = (), known: dict[str, str] | None = None
) -> list[tuple[str, str]]:
    """(id, display name) of the viewers with a stored finding (and the one selected), for
    the report's filter, by name: a viewer with nothing to show is no useful filter, and a
    world of 2,000 viewers would make a select nobody can use. `known`: names already read,
    by name (as leak_findings_page gives its viewers)."""
    # The scan rows that count a finding (each counts its stored ones, LeakScan.kinds_json):
    # 2,000 rows, not DISTINCT over 20,000 findings.
    ids = set(LeakScan.objects.exclude(kinds_json="{}").values_list("viewer_id", flat=True))
    ids.update(listed)  # viewers scanned afresh for this page are not stored yet
    if selected:
        ids.add(selected)
    if known is not None and ids <= known.keys():  # in name order already: no sort again
        return [(i, name) for i, name in known.items() if i in ids]
    return list(_by_name(display_names(ids, known)).items())


def _by_name(names: dict[str, str]) -> dict[str, str]:
    """id -> name in the report's order of viewers: by name, casefolded, then id."""
    return {i: names[i] for i in sorted(names, key=lambda i: (names[i].casefold(), i))}


def leak_findings(
    *,
    viewer_id: str | None = None,
    kind: str | None = None,
    world_id: str | None = None,
    state: str | None = None,
    sort: str | None = None,
) -> list[dict]:
    """Every distinct leak in every viewer's prompt, with its world, count, source row,
    context, acceptance state and the names of its viewer and entity (ids stay beside them).
    The exports and the API read this; the page reads leak_findings_page."""
    report = leak_report(viewer_id)
    found = [f for v in report.findings for f in report.findings[v]]
    if kind is not None:
        found = [f for f in found if f.finding.kind == kind]
    if world_id is not None:
        found = [f for f in found if f.world_id == world_id]
    items = with_state([f.to_dict() for f in found], found)
    if state is not None:
        items = [f for f in items if f["state"] == state]
    _named(items)
    return _sorted(items, sort)


def leak_findings_page(
    start: int,
    size: int,
    *,
    viewer_id: str | None = None,
    kind: str | None = None,
    world_id: str | None = None,
    state: str | None = None,
    sort: str | None = None,
) -> tuple[list[dict], int, dict[str, str]]:
    """leak_findings(...)[start:start + size], how many it holds and its viewers (id -> name,
    by name):
    every finding sorted and counted by its key alone, only the page's read and made whole.
    At 20,000 findings the report shaped every one to show 100 (754 ms on PostgreSQL)."""
    state_now, fresh, _pending = _behind(viewer_id)
    if (sort if sort in SORTS else DEFAULT_SORT) == "viewer" and world_id is None:
        return _page_by_viewer(start, size, viewer_id, kind, state, state_now.current, fresh)
    # Each finding's key (as to_dict names it), with what it is read by: its stored row's pk,
    # or the finding itself for a viewer behind, scanned for this page (after the stored).
    keyed = [
        dict(zip(_KEY, row, strict=True))
        for row in (current_finding_keys(viewer_id) if state_now.current else ())
    ]
    keyed += [
        dict(zip(_KEY, (f, f.viewer_id, f.section, f.finding.kind, f.finding.text,
                        f.finding.start, f.finding.end, f.count, f.world_id), strict=True))
        for found in fresh.values()
        for f in found
    ]  # fmt: skip
    if kind is not None:
        keyed = [k for k in keyed if k["kind"] == kind]
    if world_id is not None:
        keyed = [k for k in keyed if k["world_id"] == world_id]
    accepted = acceptances({k["viewer_id"] for k in keyed}) if keyed else {}
    for k in keyed:
        done = (k["viewer_id"], k["section"], k["kind"], k["text"]) in accepted
        k["state"] = "accepted" if done else "open"
    if state is not None:
        keyed = [k for k in keyed if k["state"] == state]
    names = display_names({k["viewer_id"] for k in keyed})
    for k in keyed:
        k["viewer_name"] = names[k["viewer_id"]]
    refs = [k["ref"] for k in _sorted(keyed, sort)[start : start + size]]
    stored = findings_by_key([r for r in refs if isinstance(r, int)])
    found_page = [stored[r] if isinstance(r, int) else r for r in refs]
    items = with_state([f.to_dict() for f in found_page], found_page)
    _named(items)
    return items, len(keyed), _by_name({k["viewer_id"]: k["viewer_name"] for k in keyed})


_KEY = ("ref", "viewer_id", "section", "kind", "text", "start", "end", "count", "world_id")


def _page_by_viewer(
    start: int,
    size: int,
    viewer_id: str | None,
    kind: str | None,
    state: str | None,
    current: int,
    fresh: dict[str, list[ScanFinding]],
) -> tuple[list[dict], int, dict[str, str]]:
    """leak_findings_page in the report's default order (by viewer name, then id, then where
    each finding stands): every viewer's findings are together, so the page is found among
    the viewers by their counts (the scan rows' counts by kind and the accepted ones: a row a
    viewer) and only the viewers it spans are read, not every finding."""
    totals, accepted = finding_counts(viewer_id) if current else ({}, {})
    shown: dict[str, int] = {}
    for viewer, kinds in totals.items():
        if kind is None and state is None and viewer not in accepted:  # most, unfiltered
            shown[viewer] = sum(kinds.values())
            continue
        wanted = [kind] if kind is not None else kinds
        everything = sum(kinds.get(k, 0) for k in wanted)
        taken = sum(accepted.get(viewer, {}).get(k, 0) for k in wanted)
        n = {None: everything, "open": everything - taken, "accepted": taken}.get(state, 0)
        if n:
            shown[viewer] = n
    fresh_items: dict[str, list[dict]] = {}
    for viewer, found in fresh.items():  # the viewers behind, scanned for this page
        items = _filtered(with_state([f.to_dict() for f in found], found), kind, state)
        if items:
            fresh_items[viewer], shown[viewer] = items, len(items)
    names = _by_name(display_names(shown))
    at, before, spanned = 0, 0, []  # where each viewer's findings begin; those of the page
    for viewer in names:
        if at >= start + size:
            break
        if at + shown[viewer] <= start:
            before = at + shown[viewer]
        else:
            spanned.append(viewer)
        at += shown[viewer]
    stored = stored_findings([v for v in spanned if v not in fresh_items])
    found = [f for v in spanned if v not in fresh_items for f in stored[v]]
    items = _filtered(with_state([f.to_dict() for f in found], found), kind, state)
    items += [item for v in spanned for item in fresh_items.get(v, ())]
    _named(items)
    page = _sorted(items, "viewer")[start - before : start - before + size]
    return page, sum(shown.values()), names


def _filtered(items: list[dict], kind: str | None, state: str | None) -> list[dict]:
    return [
        item
        for item in items
        if (kind is None or item["kind"] == kind) and (state is None or item["state"] == state)
    ]


def _named(items: list[dict]) -> None:
    """The names of each item's viewer and entity, and whether its entity can be given a
    label by its viewer (in place)."""
    entity_ids = {f["entity_id"] for f in items if f["entity_id"]}
    names = display_names({f["viewer_id"] for f in items} | entity_ids)
    entities = _entities(entity_ids)
    for item in items:
        item["viewer_name"] = names[item["viewer_id"]]
        entity = item["entity_id"]
        item["entity_name"] = names[entity] if entity else None
        # A label can be given only to another entity (never to a place or to oneself).
        # An alias answers a name or an id the viewer met, not a private value.
        item["can_alias"] = (
            item["kind"] in ALIASABLE and entity in entities and entity != item["viewer_id"]
        )


def _sorted(items: list[dict], sort: str | None) -> list[dict]:
    """In the report's order: by `sort` (SORTS), ties by where each stands in its prompt (one
    sort by both keys: what sorting by the second, then stably by the first, gives)."""
    by = SORTS[sort if sort in SORTS else DEFAULT_SORT]
    items.sort(key=lambda f: (by(f), f["viewer_id"], f["start"], f["end"], f["kind"]))
    return items


def named_reason(finding: dict, names: dict[str, str]) -> str:
    """The finding's reason with its viewer and entity by name, for a page (the exports
    and the API keep the ids)."""
    return reason_by_name(
        finding["reason"],
        finding["viewer_id"],
        finding.get("entity_id"),
        finding.get("attribute_name"),
        lambda i: names.get(i, i),
    )


def find_finding(viewer_id: str, section: str, kind: str, text: str) -> ScanFinding | None:
    """The viewer's current finding with this key (what an acceptance names), if any."""
    report = leak_report(viewer_id)
    for f in report.findings.get(viewer_id, []):
        if f.key == (viewer_id, section, kind, text):
            return f
    return None


def leak_kinds() -> tuple[str, ...]:
    return FINDING_KINDS


def leak_worlds() -> list[str]:
    return sorted(w for w in LeakScan.objects.values_list("world_id", flat=True).distinct() if w)


@dataclass(frozen=True)
class LeakTally:
    """Open findings per viewer and kind, for the overview and a save's page."""

    counts: dict[str, dict[str, int]]  # viewer -> kind -> open findings, for those with any
    known: int  # viewers whose findings are known (those not in counts are clean)
    rescanned: list[str]  # the known ones scanned in memory for this read
    pending: list[str]  # viewers whose findings are behind and were not rescanned
    viewers: int  # every agent of the save

    def known_viewers(self) -> list[str]:
        """Every viewer whose findings are known, by id (read whole: for a few)."""
        stored = current_viewers() if self.known > len(self.rescanned) else []
        return sorted([*stored, *self.rescanned])


def leak_tally() -> LeakTally:
    """The open findings of every agent whose findings are known, counted by the database
    for the stored ones (a fixed number of statements, whatever the world's size); the few
    behind are scanned in memory, as the report does; accepted findings are not counted."""
    state, fresh, pending = _behind(None)
    stored = open_counts() if state.current else {}
    counts = stored  # (this read's own dicts)
    accepted = acceptances(fresh) if any(fresh.values()) else {}
    for viewer, found in fresh.items():
        per_kind = Counter(f.finding.kind for f in found if f.key not in accepted)
        if per_kind:
            counts[viewer] = dict(per_kind)
    return LeakTally(
        counts=counts,
        known=state.current + len(fresh),
        rescanned=sorted(fresh),
        pending=pending,
        viewers=state.viewers,
    )


def leak_counts(tally: LeakTally | None = None) -> dict[str, dict[str, int]]:
    """viewer id -> kind -> open findings (zeros kept), over every viewer whose findings are
    known; accepted findings are not counted."""
    tally = tally or leak_tally()
    return {
        viewer: {kind: tally.counts.get(viewer, {}).get(kind, 0) for kind in FINDING_KINDS}
        for viewer in tally.known_viewers()
    }


@dataclass(frozen=True)
class FlawCounts:
    """omnia's quiet line flaws in the save's scanned prompts (issue 30): how many, and in
    how many viewers' prompts, as of each viewer's last scan."""

    total: int
    viewers: int


def flaw_counts() -> FlawCounts:
    found = LeakScan.objects.filter(flaws__gt=0).aggregate(total=Sum("flaws"), viewers=Count("*"))
    return FlawCounts(total=found["total"] or 0, viewers=found["viewers"])
