"""The leak findings of every viewer: the report (page, exports, API) and the tallies the
overview and a save's page show. A viewer's prompt cut at its findings: prompt_view.py."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from memory.engine.knowledge import get_viewer
from memory.engine.leaks.accepted import acceptances
from memory.engine.leaks.scanner import reason_by_name
from memory.engine.leaks.standing import (
    Board,
    current_finding_keys,
    current_findings,
    findings_by_key,
    open_counts,
    read_board,
)
from memory.engine.leaks.stored import scan_fresh, stored_findings
from memory.engine.leaks.world_scan import FINDING_KINDS, ScanFinding
from memory.models import ObjectType, WorldObject
from memory.selectors.viewers import display_names, list_worlds

# A page rescans in memory at most this many viewers whose stored findings are behind (a
# just-loaded world, a write not yet folded); past it they are listed as pending, and the
# next projection cycle (run_projections) stores them. Reads never write.
FRESH_BUDGET = 50


@dataclass(frozen=True)
class LeakReport:
    findings: dict[str, list[ScanFinding]]  # viewer -> its findings (one with none: absent)
    known: int  # viewers whose findings are known: stored and current, or rescanned here
    pending: list[str]  # viewers whose findings are behind and were not rescanned


def _behind(
    viewer_id: str | None, board: Board | None = None
) -> tuple[Board, dict[str, list[ScanFinding]], list[str]]:
    """The viewers' board (where they stand), a fresh in-memory scan of the first
    FRESH_BUDGET of those behind, and the rest (pending)."""
    if viewer_id is not None:
        get_viewer(viewer_id)  # NotFound for an unknown id
    board = board or read_board(viewer_id)
    behind = board.standing.behind
    rescanned, pending = behind[:FRESH_BUDGET], behind[FRESH_BUDGET:]
    fresh = scan_fresh(rescanned) if rescanned else {}
    return board, {v: fresh.get(v, []) for v in rescanned}, pending


def leak_report(viewer_id: str | None = None) -> LeakReport:
    """Stored findings for the viewers whose scan is current; a fresh in-memory scan for the
    few that are behind; the rest pending."""
    board, fresh, pending = _behind(viewer_id)
    current = board.standing.current
    findings = current_findings(viewer_id) if current else {}
    findings.update((v, found) for v, found in fresh.items() if found)
    return LeakReport(findings=findings, known=current + len(fresh), pending=pending)


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


def with_state(
    items: list[dict], found: Iterable[ScanFinding], *, accepting: bool = True
) -> list[dict]:
    """Each finding's acceptance state, beside it (no query when there is nothing to mark,
    or when the caller knows the save accepts nothing: `accepting`, Board.accepting)."""
    accepted = acceptances({f.viewer_id for f in found}) if items and accepting else {}
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


# The viewer filter suggests at most this many viewers as one types.
VIEWERS_SUGGESTED = 20


def viewer_suggestions(text: str, limit: int = VIEWERS_SUGGESTED) -> list[tuple[str, str]]:
    """(id, name) of the first `limit` viewers with a finding (by name, as the report lists
    them: those behind scanned afresh too) whose name or id holds `text`, casefolded: what
    the report's viewer field offers as one types (every one of 2,000 in the page was a tenth
    of it)."""
    wanted = text.strip().casefold()
    _page, _total, viewers = leak_findings_page(0, 1)
    found = [(i, name) for i, name in viewers.items() if wanted in f"{name}\n{i}".casefold()]
    return found[:limit]


def viewer_named(text: str) -> str:
    """The id of the entity `text` names: itself when it is an id, else the one entity
    whose name it is (casefolded), else `text` as given (the report then says no entity has
    that id). The viewer field takes a name typed without the suggestions' help."""
    if WorldObject.objects.filter(id=text, type=ObjectType.ENTITY).exists():
        return text
    ids = WorldObject.objects.filter(type=ObjectType.ENTITY).values_list("id", flat=True)
    wanted = text.strip().casefold()
    named = [i for i, name in display_names(list(ids)).items() if name.casefold() == wanted]
    return named[0] if len(named) == 1 else text


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
    board, fresh, _pending = _behind(viewer_id)
    if (sort if sort in SORTS else DEFAULT_SORT) == "viewer" and world_id is None:
        return _page_by_viewer(start, size, viewer_id, kind, state, board, fresh)
    # Each finding's key (as to_dict names it), with what it is read by: its stored row's pk,
    # or the finding itself for a viewer behind, scanned for this page (after the stored).
    keyed = [
        dict(zip(_KEY, row, strict=True))
        for row in (current_finding_keys(viewer_id) if board.standing.current else ())
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
    accepted = acceptances({k["viewer_id"] for k in keyed}) if keyed and board.accepting else {}
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
    items = with_state([f.to_dict() for f in found_page], found_page, accepting=board.accepting)
    viewers = {k["viewer_id"]: k["viewer_name"] for k in keyed}
    _named(items, board, viewers)
    return items, len(keyed), _by_name(viewers)


_KEY = ("ref", "viewer_id", "section", "kind", "text", "start", "end", "count", "world_id")


def _page_by_viewer(
    start: int,
    size: int,
    viewer_id: str | None,
    kind: str | None,
    state: str | None,
    board: Board,
    fresh: dict[str, list[ScanFinding]],
) -> tuple[list[dict], int, dict[str, str]]:
    """leak_findings_page in the report's default order (by viewer name, then id, then where
    each finding stands): every viewer's findings are together, so the page is found among
    the viewers by their counts (the scan rows' counts by kind and the accepted ones: a row a
    viewer) and only the viewers it spans are read, not every finding."""
    totals, accepted = board.finding_counts() if board.standing.current else ({}, {})
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
        items = _shaped(found, kind, state, board)
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
    items = _shaped(found, kind, state, board)
    items += [item for v in spanned for item in fresh_items.get(v, ())]
    _named(items, board, names)  # (the entities are viewers too, as a rule: no read)
    page = _sorted(items, "viewer")[start - before : start - before + size]
    return page, sum(shown.values()), names


def _shaped(found: list[ScanFinding], kind: str | None, state: str | None, board: Board) -> list:
    """These findings as the report shows them, with their state, of `kind` and `state`."""
    items = with_state([f.to_dict() for f in found], found, accepting=board.accepting)
    return [i for i in items if kind in (None, i["kind"]) and state in (None, i["state"])]


def _named(
    items: list[dict], board: Board | None = None, known: dict[str, str] | None = None
) -> None:
    """The names of each item's viewer and entity, and whether its entity can be given a
    label by its viewer (in place). `board`: the save's, when read (it holds every entity);
    `known`: names the caller has read (the report's viewers), not asked again."""
    entity_ids = {f["entity_id"] for f in items if f["entity_id"]}
    names = display_names({f["viewer_id"] for f in items} | entity_ids, known)
    if board is not None and board.viewer_id is None:
        entities = entity_ids & {r.viewer_id for r in board.rows}
    else:
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
    """The worlds the report filters by: the save's (each viewer's world is one of them; a
    DISTINCT over the 2,000 scan rows was 2 ms of the report on PostgreSQL)."""
    return [world.id for world in list_worlds()]


@dataclass(frozen=True)
class LeakTally:
    """Open findings per viewer and kind, for the overview and a save's page."""

    counts: dict[str, dict[str, int]]  # viewer -> kind -> open findings, for those with any
    known: int  # viewers whose findings are known (those not in counts are clean)
    rescanned: list[str]  # the known ones scanned in memory for this read
    pending: list[str]  # viewers whose findings are behind and were not rescanned
    viewers: int  # every agent of the save
    current: list[str]  # the agents whose stored findings are current, by id

    def known_viewers(self) -> list[str]:
        """Every viewer whose findings are known, by id."""
        return sorted([*self.current, *self.rescanned])


def leak_board() -> Board:
    """The active save's agents beside their scan rows (standing.read_board): read once by a
    page that shows several tallies (leak_tally, flaw_counts, labels.suspicious_labels)."""
    return read_board()


def leak_tally(board: Board | None = None) -> LeakTally:
    """The open findings of every agent whose findings are known, counted by the database
    for the stored ones (a fixed number of statements, whatever the world's size); the few
    behind are scanned in memory, as the report does; accepted findings are not counted.
    `board`: the agents' board, when the page has read it (read_board())."""
    board, fresh, pending = _behind(None, board)
    state = board.standing
    stored = open_counts(board=board) if state.current else {}
    counts = stored  # (this read's own dicts)
    accepted = acceptances(fresh) if board.accepting and any(fresh.values()) else {}
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
        current=[r.viewer_id for r in board.viewers if r.current],
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


def flaw_counts(board: Board | None = None) -> FlawCounts:
    """Over the entities' scan rows (read_board's, when the page has read it)."""
    flawed = [r.flaws for r in (board or read_board()).rows if r.flaws > 0]
    return FlawCounts(total=sum(flawed), viewers=len(flawed))
