"""The subjective buffer as its owner reads it: one page (cursor-paged, filtered). One entry:
memory/selectors/entries.py."""

from __future__ import annotations

import time
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, fields
from datetime import datetime

from django.conf import settings
from django.db.models import QuerySet

from memory.active_save import containing, converted_rows, current_id, scoped_rows
from memory.engine import text_index
from memory.engine.buffer.rendered import BUFFER_FIELDS, RenderedEntry, render_entry
from memory.engine.buffer.words import (
    IndexTerm,
    StoredWords,
    TermPlanner,
    WordSearch,
    json_mention,
    query_words,
    searched_text,
    types_term,
    uses_term,
)
from memory.engine.cursor import decode_cursor, encode_cursor
from memory.engine.knowledge import Viewer
from memory.models import BufferEntry


def _cursor_of(entry: RenderedEntry) -> str:
    return encode_cursor([entry.timestamp, entry.created_at, entry.id])


def _decoded(cursor: str) -> tuple[str, int, str]:
    timestamp, created_at, entry_id = decode_cursor(cursor, (str, int, str))
    return timestamp, created_at, entry_id


@dataclass
class BufferPage:
    entries: list[RenderedEntry]
    rows_visited: int
    older: str | None = None  # cursor for the page before this one
    newer: str | None = None  # cursor for the page after this one
    total: int | None = None
    filters: dict[str, str] = field(default_factory=dict)
    # A filtered scan that ran out of its budget before the page filled: the time of the
    # last row it read (the link onward continues from there: "searched back to …").
    searched_to: str | None = None


Key = tuple[str, int, str]


def viewer_rows(viewer: Viewer) -> QuerySet:
    """Every row the viewer's buffer shows. `exclude(id="")`: a row with an empty id
    (quarantined by the fold, listed on the overview) has nothing a link or a cursor can
    carry. Written as a NOT, which no index serves: `id > ''` offered the planner a range on
    the save's unique (game_save_id, id) index, and without statistics SQLite took it — every
    row of the save read and sorted, 4.8 s at 1M rows (issue 25)."""
    return BufferEntry.objects.filter(owner_id=viewer.id).exclude(id="").only(*BUFFER_FIELDS)


# The page's read (viewer_rows ordered and past a key), written out: the ORM built its
# cursor OR, order and slice in longer than the database answered (a page reads it once, a
# filtered scan once a chunk). The leading `timestamp >=` (or `<=`) repeats what the OR
# implies: the planner seeks the owner's time index to the cursor, never walks to it.
_PAST_STEPS = {True: (">=", ">", ""), False: ("<=", "<", " DESC")}


@dataclass(frozen=True)
class _Base:  # the rows a scan reads: the viewer's (viewer_rows), narrowed by `condition`
    owner_id: str
    condition: str = ""
    params: tuple = ()


def _past(base: _Base, key: Key | None, forward: bool, limit: int) -> list[_Row]:
    """At most `limit` of `base`'s rows in reading order (oldest first when `forward`),
    strictly past `key`."""
    either, strictly, way = _PAST_STEPS[forward]
    sql = f"SELECT {_ROW_COLUMNS} FROM buffer_entries WHERE game_save_id = %(save)s AND "
    sql += "owner_id = %s AND NOT (id = '')"
    params: list = [base.owner_id]
    if base.condition:
        sql += f" AND {base.condition}"
        params += base.params
    if key is not None:
        at, created_at, entry_id = key
        sql += (
            f" AND timestamp {either} %s AND (timestamp {strictly} %s OR (timestamp = %s AND "
            f"created_at {strictly} %s) OR (timestamp = %s AND created_at = %s AND "
            f"id {strictly} %s))"
        )
        params += [at, at, at, created_at, at, created_at, entry_id]
    sql += f" ORDER BY timestamp{way}, created_at{way}, id{way} LIMIT %s"
    rows = converted_rows(BufferEntry, _ROW_FIELDS, scoped_rows(sql, [*params, limit]))
    return [_Row(*row) for row in rows]


def _key(entry) -> Key:
    return entry.timestamp, entry.created_at, entry.id


@dataclass(slots=True)
class _Row:
    """A buffer row as a page reads it: the columns render_entry reads, without the cost of
    a model instance (a filtered page may read thousands)."""

    uid: int
    id: str
    timestamp: str
    created_at: int
    intent_json: str
    outcome_json: str | None
    location_id: str | None
    conversation_id: str | None
    retracted_at: datetime | None
    abstracted_into: str | None
    owner_id: str
    untimed: bool


_ROW_FIELDS = ("uid", *BUFFER_FIELDS)
assert tuple(f.name for f in fields(_Row)) == _ROW_FIELDS
_ROW_COLUMNS = ", ".join(BufferEntry._meta.get_field(name).column for name in _ROW_FIELDS)


class _Rows:
    """The rows a page reads, in reading order from a key: every row of the viewer (`base`,
    a query seeking the owner's time index), or only those the text index names."""

    def __init__(
        self,
        base: _Base,
        indexed: list[tuple[int, Key]] | None = None,
        stored: StoredWords | None = None,
    ) -> None:
        self.base = base
        self.indexed = indexed
        self.keys = [key for _uid, key in indexed] if indexed is not None else []
        self.stored = stored

    def may_pass(self, entry: _Row) -> bool:
        """Whether the row's stored words allow its line to pass (else it is not rendered)."""
        return self.stored is None or self.stored.hold(entry.intent_json, entry.outcome_json)

    def past(self, key: Key | None, forward: bool, n: int) -> list[_Row]:
        if self.indexed is None:
            return _past(self.base, key, forward, n)
        if forward:
            at = 0 if key is None else bisect_right(self.keys, key)
            picked = self.indexed[at : at + n]
        else:
            at = len(self.keys) if key is None else bisect_left(self.keys, key)
            picked = self.indexed[max(0, at - n) : at][::-1]
        # By primary key alone: the rows are known to be the viewer's.
        found = BufferEntry.every_save.filter(uid__in=[uid for uid, _ in picked])
        by_uid = {row[0]: _Row(*row) for row in found.values_list(*_ROW_FIELDS)}
        return [by_uid[uid] for uid, _ in picked if uid in by_uid]

    def any_past(self, key: Key, forward: bool) -> bool:
        return bool(self.past(key, forward, 1))

    def chunks(self, first: int) -> Iterator[int]:
        """How many rows each read takes: the index's rows mostly pass the filters, so it
        reads a few first and more as they fail."""
        size = first
        while True:
            yield size
            if self.indexed is not None:
                size = min(size * 4, 200)


@dataclass
class _Scan:
    picked: list[RenderedEntry]
    visited: int
    last: Key | None  # the last row read
    exhausted: bool  # the rows ran out in the scan's direction
    stopped: bool  # the budget ran out first
    beyond: bool = False  # unfiltered, a row past the page was read: there is a next page


def _scan(
    rows: _Rows,
    viewer: Viewer,
    start: Key | None,
    forward: bool,
    matches: Callable[[RenderedEntry], bool] | None,
    limit: int,
    *,
    max_rows: int,
    deadline: float,
) -> _Scan:
    """Read rows past `start` in chunks, each chunk a keyset seek from the last row read (an
    OFFSET re-reads every skipped row per chunk), until `limit` rows pass `matches`, the
    rows run out, or the budget (rows read, the clock) does. Unfiltered, the first read
    takes one row more than the page: whether there is a next page, without asking again."""
    if matches is None:
        first = limit + 1
    else:
        first = limit if rows.indexed is not None else max(limit * 4, 200)
    picked: list[RenderedEntry] = []
    visited, last = 0, start
    for step in rows.chunks(first):
        chunk = rows.past(last, forward, step)
        for at, entry in enumerate(chunk):
            visited += 1
            last = _key(entry)
            if matches is not None and not rows.may_pass(entry):
                continue
            rendered = render_entry(entry, viewer)
            if matches is None or matches(rendered):
                picked.append(rendered)
                if len(picked) == limit:
                    more = len(chunk) - at - 1  # rows read past the page's last
                    ran_out = not more and len(chunk) < step
                    beyond = matches is None and more > 0
                    # The row read past the page is a row its query returned (rows_visited).
                    return _Scan(picked, visited + beyond, last, ran_out, False, beyond)
        if len(chunk) < step:
            return _Scan(picked, visited, last, True, False)
        if visited >= max_rows or time.monotonic() >= deadline:
            return _Scan(picked, visited, last, False, True)
    raise AssertionError("chunks() never ends")


def _has_match(
    rows: _Rows,
    key: Key,
    forward: bool,
    viewer: Viewer,
    matches: Callable[[RenderedEntry], bool] | None,
    deadline: float,
    budget: int = 2000,
) -> tuple[bool, int]:
    """(whether a row past `key` passes the filters, rows read). Unfiltered, a row is a
    match; filtered, rows are rendered until one passes. Past the budget (rows or time) the
    answer is yes: the link then leads on to a page that scans further itself."""
    if matches is None:
        found = rows.any_past(key, forward)
        return found, int(found)
    read = 0
    for step in rows.chunks(200 if rows.indexed is None else 8):
        chunk = rows.past(key, forward, step)
        for entry in chunk:
            read += 1
            key = _key(entry)
            if rows.may_pass(entry) and matches(render_entry(entry, viewer)):
                return True, read
            if read >= budget or time.monotonic() >= deadline:
                return True, read
        if len(chunk) < step:
            return False, read
    raise AssertionError("chunks() never ends")


# More rows than this may hold the words: reading in order fills a page sooner than fetching.
INDEXED_ROWS = 3_000


def _terms(
    viewer: Viewer, words: tuple[str, ...], types: frozenset[str] | None, uses: str | None
) -> list[IndexTerm]:
    """What a row must hold for its line to pass the filters (memory.engine.buffer.words):
    a term per filter that can say."""
    terms = []
    if words:
        planner = TermPlanner(viewer.id, viewer.aliases)
        terms += [t for t in map(planner.term, words) if t is not None]
    if uses and (term := uses_term(uses)) is not None:
        terms.append(term)
    if types and (term := types_term(types)) is not None:
        terms.append(term)
    return terms


def buffer_page(
    viewer: Viewer,
    *,
    before: str | None = None,
    after: str | None = None,
    limit: int | None = None,
    types: frozenset[str] | None = None,
    q: str | None = None,
    uses: str | None = None,
    scan_limit: int = 20000,
    oldest_first: bool = False,
) -> BufferPage:
    """One page of the viewer's buffer, chronological, newest page first by default.

    Filters apply to what the viewer reads (type; `q`, words the line holds, each query word
    beginning one of its words; `uses`, the lines that name this entity, i.e. print the
    viewer's alias for it), so they decide after rendering. The text index narrows the rows
    read to those that may pass (memory.engine.buffer.words); where it cannot, the rows are
    read in order. One page reads at most `scan_limit` rows and OMNIA_BUFFER_SCAN_SECONDS of
    time to find matches; a scan stopped by that says how far back it searched
    (`searched_to`) and its link onward continues from there. `oldest_first`: with no cursor,
    the first page is the oldest one (a story read from its start), not the newest.
    """
    limit = max(1, min(limit or settings.OMNIA_BUFFER_PAGE_SIZE, 500))
    deadline = time.monotonic() + settings.OMNIA_BUFFER_SCAN_SECONDS
    forward = after is not None or (oldest_first and before is None)
    start = _decoded(after) if after else _decoded(before) if before else None
    words = query_words(q)
    search = WordSearch(words)
    filtered = bool(types or words or uses)

    def matches(rendered: RenderedEntry) -> bool:
        if types and rendered.type not in types:
            return False
        if uses and uses not in names_in(rendered):
            return False
        if not words:
            return True
        text = searched_text(
            rendered.line, rendered.intent_json, rendered.outcome_json, rendered.line_corrected
        )
        return search.matches(text)

    base = _Base(viewer.id)
    terms = _terms(viewer, words, types, uses) if filtered else []
    stored = StoredWords(terms) if terms else None
    check = matches if filtered else None
    scan, rows, probed = None, None, 0
    if terms:
        # One chunk read in order first: words in many of the viewer's lines fill the page
        # from it, before the index is asked (its answer costs more the commoner the word).
        rows = _Rows(base, None, stored)
        probe = _scan(rows, viewer, start, forward, check, limit, max_rows=1, deadline=deadline)
        if probe.stopped:
            # The rows the text index says may pass; None where it cannot narrow them (then
            # every row is read in order, within the budget).
            indexed = text_index.candidates(current_id(), viewer.id, terms, INDEXED_ROWS)
            rows = _Rows(base, indexed, stored) if indexed is not None else None
            probed = probe.visited
        else:
            scan = probe
    if rows is None:
        if uses and (mention := json_mention(uses)):
            # Only a row whose intent holds the id as a JSON string can name it: the database
            # drops the rest before anything is rendered (names_in still decides).
            base = _Base(viewer.id, *containing("intent_json", mention))
        rows = _Rows(base, None, stored)
    if scan is None:
        scan = _scan(
            rows, viewer, start, forward, check, limit, max_rows=scan_limit, deadline=deadline
        )
    picked = scan.picked
    if not forward:
        picked.reverse()
    page = BufferPage(entries=picked, rows_visited=probed + scan.visited)
    # The link in the scan's own direction: none when the rows ran out; from the last row
    # read when the budget did (continue the search); else wherever a further match is.
    ahead: str | None = None
    if scan.stopped and scan.last is not None:
        ahead = encode_cursor(list(scan.last))
        page.searched_to = scan.last[0]
    elif not scan.exhausted and picked:
        edge = picked[-1] if forward else picked[0]
        if scan.beyond:  # the scan read a row past the page already
            found = True
        else:
            found, read = _has_match(rows, _key(edge), forward, viewer, check, deadline)
            page.rows_visited += read
        ahead = _cursor_of(edge) if found else None
    # The link back, from the row nearest where the page started (none for a page read from
    # the buffer's end: its own scan read everything behind it).
    behind: str | None = None
    if picked and start is not None:
        edge = picked[0] if forward else picked[-1]
        found, read = _has_match(rows, _key(edge), not forward, viewer, check, deadline)
        page.rows_visited += read
        behind = _cursor_of(edge) if found else None
    page.newer, page.older = (ahead, behind) if forward else (behind, ahead)
    page.filters = {
        k: v
        for k, v in {
            "type": ",".join(sorted(types or ())),
            "q": q or "",
            "uses": uses or "",
        }.items()
        if v
    }
    return page


def names_in(entry: RenderedEntry) -> tuple[str, ...]:
    """The entities a line names (its actor and targets): where the viewer's aliases show."""
    return tuple(dict.fromkeys(i for i in (entry.actor_id, *entry.target_ids) if i))
