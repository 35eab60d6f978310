"""Search across a save (issue 27 item 4): the events one of whose witnesses reads a line that
holds every word of the query — each query word beginning a word of that line, as the buffer's
`q` (memory.engine.buffer.words) — newest first, a page at a time by keyset.

The text index narrows the save's rows to those that may hold the words, whoever owns them
(`text_index.save_candidates`, with index terms for the words any viewer of the save may read:
`TermPlanner.for_many`); their timestamps are the moments to look at. Where the index cannot
narrow them, the save's moments are read newest first, within the buffer's scan budget
(OMNIA_BUFFER_SCAN_SECONDS); a page stopped by it says how far back it searched, and its
cursor continues from there.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

from memory.active_save import current_id, scoped_cursor
from memory.engine import events, text_index
from memory.engine.aliases import AliasesJsonError, parse_aliases_json
from memory.engine.buffer.rendered import render_readings
from memory.engine.buffer.words import (
    IndexTerm,
    StoredWords,
    TermPlanner,
    WordSearch,
    query_words,
    searched_text,
)
from memory.engine.cursor import decode_cursor, encode_cursor
from memory.engine.knowledge import Viewer, viewer_of
from memory.models import ObjectType, WorldObject

# More rows than this may hold the words (of every owner): reading the moments in order
# finds a page sooner. Each candidate costs a read of its row for its timestamp: 20,000 of
# them (a word in one moment of 300 at 1M rows) took 4.1 s on a cold cache.
CANDIDATE_ROWS = 3_000
TIMESTAMPS_PER_READ = 200

_TIMESTAMPS_BEFORE = (
    "SELECT DISTINCT timestamp FROM buffer_entries WHERE game_save_id = %(save)s "
    "AND timestamp < %s ORDER BY timestamp DESC LIMIT %s"
)
_TIMESTAMPS_AT_OR_BEFORE = _TIMESTAMPS_BEFORE.replace("timestamp < %s", "timestamp <= %s")
_NEWEST_TIMESTAMPS = (
    "SELECT DISTINCT timestamp FROM buffer_entries WHERE game_save_id = %(save)s "
    "ORDER BY timestamp DESC LIMIT %s"
)


@dataclass(frozen=True)
class FoundWitness:
    viewer_id: str
    entry_id: str
    line: str | None  # None: the row cannot be shown (`undeliverable` says why)
    undeliverable: str | None
    matched: bool  # this witness's line holds the words


@dataclass(frozen=True)
class FoundEvent:
    event: str
    timestamp: str
    witnesses: tuple[FoundWitness, ...]


@dataclass
class SearchPage:
    events: list[FoundEvent] = field(default_factory=list)
    older: str | None = None  # the cursor of the next page (pass as `before`)
    searched_to: str | None = None  # out of time: the moments searched reach back to this
    rows_visited: int = 0


# The save's term planner, by save, with the digest of the alias maps it was built from: a
# planner reads every alias of every viewer (40,000 labels at 2,000 entities, a fifth of a
# second), the maps themselves a few milliseconds; it is built again when they differ.
_PLANNERS: dict[int, tuple[str, TermPlanner]] = {}
_PLANNERS_KEPT = 8


def _planner() -> TermPlanner:
    rows = (
        WorldObject.objects.filter(type=ObjectType.ENTITY)
        .order_by("id")
        .values_list("id", "aliases_json")
    )
    digest = hashlib.sha1()
    texts = []
    for entity_id, text in rows:
        digest.update(f"{len(entity_id)}:{entity_id}{len(text or '')}:{text or ''}".encode())
        texts.append(text)
    save, key = current_id(), digest.hexdigest()
    kept = _PLANNERS.get(save)
    if kept is not None and kept[0] == key:
        return kept[1]
    maps = []
    for text in texts:
        try:
            maps.append(parse_aliases_json(text))
        except AliasesJsonError:
            continue
    planner = TermPlanner.for_many(maps)
    if len(_PLANNERS) >= _PLANNERS_KEPT:
        _PLANNERS.clear()
    _PLANNERS[save] = (key, planner)
    return planner


def _moments(terms: list[IndexTerm], start: str | None) -> Iterator[list[str]]:
    """Timestamps that may hold a match, newest first, at or before `start`, in chunks."""
    found = text_index.save_candidates(current_id(), terms, CANDIDATE_ROWS) if terms else None
    if found is not None:
        found = [t for t in found if start is None or t <= start]
        for at in range(0, len(found), TIMESTAMPS_PER_READ):
            yield found[at : at + TIMESTAMPS_PER_READ]
        return
    last, first = start, True
    while True:
        with scoped_cursor() as cursor:
            if last is None:
                cursor.execute(_NEWEST_TIMESTAMPS, [TIMESTAMPS_PER_READ])
            else:
                # The first read takes the cursor's own moment too (its older events).
                cursor.execute(
                    _TIMESTAMPS_AT_OR_BEFORE if first else _TIMESTAMPS_BEFORE,
                    [last, TIMESTAMPS_PER_READ],
                )
            chunk = [t for (t,) in cursor.fetchall()]
        if not chunk:
            return
        first = False
        yield chunk
        last = chunk[-1]


class _Readers:
    """The owners of the rows read, as viewers, each read once."""

    def __init__(self) -> None:
        self.known: dict[str, Viewer] = {}

    def load(self, ids: set[str]) -> None:
        wanted = sorted(ids - set(self.known))
        for obj in WorldObject.objects.filter(id__in=wanted):
            self.known[obj.id] = viewer_of(obj)
        for missing in set(wanted) - set(self.known):
            self.known[missing] = Viewer.of(missing, {})


def search_events(
    q: str | None, *, before: str | None = None, limit: int = 20, seconds: float = 0.25
) -> SearchPage:
    """One page of the save's events matching `q`, newest first (BadCursor for a `before`
    that is not one of ours)."""
    words = query_words(q)
    page = SearchPage()
    if not words:
        return page
    cursor = tuple(decode_cursor(before, (str, str))) if before else None
    search = WordSearch(words)
    deadline = time.monotonic() + seconds
    readers = _Readers()
    terms = [t for t in map(_planner().term, words) if t is not None]
    stored = StoredWords(terms)
    for chunk in _moments(terms, cursor[0] if cursor else None):
        rows = events.rows_at(chunk)
        page.rows_visited += len(rows)
        readers.load({r.owner_id for r in rows})
        by_event: dict[str, list[events.WitnessRow]] = {}
        for row in rows:
            by_event.setdefault(row.event, []).append(row)
        for event in sorted(by_event, key=lambda e: (by_event[e][0].timestamp, e), reverse=True):
            timestamp = by_event[event][0].timestamp
            if cursor and (timestamp, event) >= cursor:
                continue
            found = _matched(by_event[event], readers, search, stored)
            if found is None:
                continue
            if len(page.events) == limit:
                last = page.events[-1]
                page.older = encode_cursor([last.timestamp, last.event])
                return page
            page.events.append(FoundEvent(event, timestamp, found))
        # Out of time, and past the cursor's own moment (so the next page starts further back).
        if time.monotonic() >= deadline and (cursor is None or chunk[-1] < cursor[0]):
            page.searched_to = chunk[-1]
            page.older = encode_cursor([chunk[-1], ""])
            return page
    return page


def _matched(
    rows: list[events.WitnessRow], readers: _Readers, search: WordSearch, stored: StoredWords
) -> tuple[FoundWitness, ...] | None:
    """The event's witnesses with their lines, if one line holds the words; else None."""
    if not any(stored.hold(r.intent_json, r.outcome_json) for r in rows):
        return None
    witnesses = []
    for r in sorted(rows, key=lambda r: (r.owner_id, r.entry_id)):
        args = (r.timestamp, r.intent_json, r.outcome_json, r.untimed, readers.known[r.owner_id])
        line, corrected, why = render_readings(*args)
        # A v2 row reads differently corrected (issue 30); a search finds it by either reading.
        corrected = corrected if '"content"' in r.intent_json else None
        text = searched_text(line, r.intent_json, r.outcome_json, corrected)
        witnesses.append(FoundWitness(r.owner_id, r.entry_id, line, why, search.matches(text)))
    return tuple(witnesses) if any(w.matched for w in witnesses) else None
