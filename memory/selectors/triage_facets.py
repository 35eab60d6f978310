"""The triage queue's facets (memory.selectors.triage): the filters a page is under, and
what each facet's values count. Without a word filter the save, viewer, kind and state facets
are counted from the scan rows' counts by kind (`count_facets`, a pass over a few thousand
small dicts, not five GROUP BYs over the findings) and the word facet from every finding less
those of the viewers behind (`every_word`); the queue counts the rest by the findings."""

from __future__ import annotations

import heapq
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

from memory.active_save import scoped_cursor
from memory.engine.errors import InvalidInput
from memory.engine.leaks.world_scan import FINDING_KINDS, FINDING_STATES
from memory.models import LeakFinding, LeakScan, Save

# Facet lists show the values with most findings first, this many at most (a world of 2,000
# viewers would make a list nobody reads; the filter box still takes any id).
FACET_VALUES = 30
FACETS = ("save", "viewer", "kind", "word", "state")
KIND_WORDS = {
    "system_id": "system id",
    "unknown_name": "name not known to the viewer",
    "private_attribute": "private detail",
}
_FINDINGS = LeakFinding._meta.db_table
_SCANS = LeakScan._meta.db_table


@dataclass(frozen=True)
class QueueFilters:
    save: str | None = None
    viewer: str | None = None
    kind: str | None = None
    word: str | None = None
    state: str | None = None

    def __post_init__(self) -> None:
        if self.kind is not None and self.kind not in FINDING_KINDS:
            raise InvalidInput(f"kind must be one of {', '.join(FINDING_KINDS)}", field="kind")
        if self.state is not None and self.state not in FINDING_STATES:
            raise InvalidInput(f"state must be one of {', '.join(FINDING_STATES)}", field="state")

    def as_pairs(self, without: str | None = None) -> list[tuple[str, str]]:
        return [
            (name, value)
            for name in FACETS
            if name != without and (value := getattr(self, name)) is not None
        ]


@dataclass
class Facet:
    name: str
    values: list[tuple[str, str, int]]  # (value, words for it, findings)
    more: bool = False  # values past FACET_VALUES were left off


def every_word(saves: dict[int, Save]) -> dict[str, int]:
    """The word facet's counts under no other filter (word casefolded -> findings): every
    stored finding of the live saves counted by its text, less those of the viewers whose scan
    is stale (a few, found on the scan rows' stale index). Checking each of 20,000 findings'
    scan cost as much as counting them (PostgreSQL 8.7 ms against 5.4, SQLite 12 against 7);
    the ORM's statement and its converters on 2,000 rows of counts were another 2-3 ms, hence
    SQL, a save at a time; and the counts are summed by word here, not made into a row each
    (10,000 texts: 6 ms of the queue's 27 on PostgreSQL)."""
    every = f"SELECT text, COUNT(*) FROM {_FINDINGS} WHERE game_save_id = %(save)s GROUP BY text"
    # From the stale scans to their findings, in that order (CROSS JOIN: SQLite keeps the
    # order written): offered the findings first, SQLite's planner read them all in text order
    # off the words index, to spare itself the grouping's sort (19 ms for no stale viewer).
    behind = (
        f"SELECT f.text, COUNT(*) FROM {_SCANS} s CROSS JOIN {_FINDINGS} f "
        "WHERE s.game_save_id = %(save)s AND s.stale "
        "AND f.game_save_id = s.game_save_id AND f.viewer_id = s.viewer_id GROUP BY f.text"
    )
    counts: dict[str, int] = {}
    for pk in sorted(saves):
        with scoped_cursor(pk) as cursor:
            cursor.execute(every)
            for text, n in cursor.fetchall():
                word = text.casefold()
                counts[word] = counts.get(word, 0) + n
            cursor.execute(behind)
            for text, n in cursor.fetchall():
                counts[text.casefold()] -= n
    # (A word none of whose findings is left is no value: counts never go below none.)
    return {word: n for word, n in counts.items() if n}


class _Tally(NamedTuple):
    """What one viewer's counts by kind add to the facets (count_facets)."""

    save: int  # to its save's value
    viewer: int  # to its own value
    kinds: tuple[tuple[str, int], ...]  # to each kind's value
    accepted: int  # to the state facet's
    open: int


def _tally(
    kinds: dict[str, int],
    taken: dict[str, int],
    filters: QueueFilters,
    save_missed: bool,
    viewer_missed: bool,
) -> _Tally:
    """One viewer's counts (`kinds`; `taken`: the accepted among them) as they count toward
    each facet: toward a facet when they pass every filter but that facet's own."""
    state = filters.state
    save_n = viewer_n = accepted = opened = 0
    by_kind = []
    for kind, total in kinds.items():
        kind_missed = filters.kind is not None and kind != filters.kind
        missed = save_missed + viewer_missed + kind_missed
        if missed > 1:
            continue
        done = taken.get(kind, 0)
        n = total if state is None else done if state == "accepted" else total - done
        if n and (not missed or save_missed):
            save_n += n
        if n and (not missed or viewer_missed):
            viewer_n += n
        if n and (not missed or kind_missed):
            by_kind.append((kind, n))
        if not missed:  # the state facet leaves out only the state filter
            accepted += done
            opened += total - done
    return _Tally(save_n, viewer_n, tuple(by_kind), accepted, opened)


# (save, entity id) pairs -> the name each save gives its entity (triage._names).
Names = Callable[[set[tuple[int, str]], dict[int, Save]], dict[tuple[int, str], str]]


def count_facets(
    filters: QueueFilters, saves: dict[int, Save], counted: dict, names: Names
) -> dict[str, Facet]:
    """The save, viewer, kind and state facets (not the word's) from the scan rows' counts
    (`counted`: each save's standing.queue_counts), in one pass; `names` names the viewers
    shown. Five GROUP BYs over 20,000
    findings were 65 ms of the queue's page. The viewers of a save share a few dozen count
    rows (standing._counts_of hands out one dict for the same text): each is tallied once,
    and what a viewer with no acceptance adds is that tally's (the pass was 3.7 ms of the
    queue's 26 when every viewer's kinds were weighed one by one, PostgreSQL, 20,000
    findings)."""
    by_save: dict[str, int] = {}
    by_kind: dict[str, int] = {}
    by_state = {"accepted": 0, "open": 0}
    per_save: dict[int, dict[str, int]] = {}  # save -> viewer -> its findings there
    for pk in sorted(saves):
        name = saves[pk].name
        save_missed = filters.save is not None and name != filters.save
        totals, accepted = counted[pk].counts, counted[pk].accepted
        tallies: dict[tuple[int, bool], _Tally] = {}
        uses: dict[tuple[int, bool] | str, int] = {}  # each tally's viewers (an id: its own)
        in_save = per_save[pk] = {}
        for viewer, kinds in totals.items():
            viewer_missed = filters.viewer is not None and viewer != filters.viewer
            if save_missed and viewer_missed:
                continue
            taken = accepted.get(viewer)
            key: tuple[int, bool] | str = viewer if taken else (id(kinds), viewer_missed)
            tally = tallies.get(key)
            if tally is None:
                tally = tallies[key] = _tally(
                    kinds, taken or {}, filters, save_missed, viewer_missed
                )
            uses[key] = uses.get(key, 0) + 1
            if tally.viewer:
                in_save[viewer] = tally.viewer
        for key, times in uses.items():
            tally = tallies[key]
            if tally.save:
                by_save[name] = by_save.get(name, 0) + tally.save * times
            for kind, n in tally.kinds:
                by_kind[kind] = by_kind.get(kind, 0) + n * times
            by_state["accepted"] += tally.accepted * times
            by_state["open"] += tally.open * times
    by_viewer: dict[str, int] = {}
    for in_save in per_save.values():
        for viewer, n in in_save.items():
            by_viewer[viewer] = by_viewer.get(viewer, 0) + n
    values = {
        "save": by_save,
        "viewer": by_viewer,
        "kind": by_kind,
        "state": {state: n for state, n in by_state.items() if n},
    }
    facets = {}
    for name, counts in values.items():
        shown = most(counts)
        words: dict[str, str] = {}
        if name == "viewer":
            # Named as the save holding most of its findings names it (ties: the first save).
            where = {
                v: min((-per_save[pk][v], pk) for pk in per_save if v in per_save[pk])[1]
                for v, _n in shown
            }
            found = names({(where[v], v) for v, _n in shown}, saves)
            words = {v: found[(where[v], v)] for v, _n in shown}
        elif name == "kind":
            words = KIND_WORDS
        facets[name] = Facet(
            name, [(v, words.get(v, v), n) for v, n in shown], more=len(counts) > FACET_VALUES
        )
    return facets


def most(counts: dict[str, int]) -> list[tuple[str, int]]:
    """The FACET_VALUES values with most findings, ties by value: sorted(...)[:FACET_VALUES]
    without sorting the 2,000 words or viewers of a big save."""
    return heapq.nsmallest(FACET_VALUES, counts.items(), key=lambda kv: (-kv[1], kv[0]))


def state_facet(states: dict[bool, int]) -> Facet:
    counted = [("open", states.get(False, 0)), ("accepted", states.get(True, 0))]
    ordered = sorted(((v, n) for v, n in counted if n), key=lambda kv: (-kv[1], kv[0]))
    return Facet("state", [(v, v, n) for v, n in ordered])
