"""The subjective buffer as its owner reads it: one page (cursor-paged, filtered), one entry."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from django.conf import settings
from django.db.models import Q, QuerySet

from memory.engine.buffer.rendered import BUFFER_FIELDS, RenderedEntry, render_entry
from memory.engine.cursor import decode_cursor, encode_cursor
from memory.engine.errors import NotFound
from memory.engine.knowledge import Viewer
from memory.engine.projections.sessions import session_key_of
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


def _after(timestamp: str, created_at: int, entry_id: str) -> Q:
    return (
        Q(timestamp__gt=timestamp)
        | Q(timestamp=timestamp, created_at__gt=created_at)
        | Q(timestamp=timestamp, created_at=created_at, id__gt=entry_id)
    )


def _before(timestamp: str, created_at: int, entry_id: str) -> Q:
    return (
        Q(timestamp__lt=timestamp)
        | Q(timestamp=timestamp, created_at__lt=created_at)
        | Q(timestamp=timestamp, created_at=created_at, id__lt=entry_id)
    )


def _has_match(
    rows: QuerySet,
    viewer: Viewer,
    matches: Callable[[RenderedEntry], bool],
    filtered: bool,
    known: bool | None,
    budget: int = 2000,
) -> tuple[bool, int]:
    """(whether `rows` hold one that passes the filters, rows read). Unfiltered, a row is a
    match; filtered, rows are rendered until one passes. Past `budget` rows the answer is yes:
    the link then leads on to a page that scans further itself."""
    if known is not None:
        return known, 0
    if not filtered:
        found = rows.exists()
        return found, int(found)
    read = 0
    for entry in rows.iterator(chunk_size=200):
        read += 1
        if matches(render_entry(entry, viewer)):
            return True, read
        if read >= budget:
            return True, read
    return False, read


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
) -> BufferPage:
    """One page of the viewer's buffer, chronological, newest page first by default.

    Filters apply to what the viewer reads (type, text in the rendered line, and `uses`: the
    lines that name this entity, i.e. print the viewer's alias for it), so they run after
    rendering; `scan_limit` bounds how many rows one page may read to find matches.
    """
    limit = max(1, min(limit or settings.OMNIA_BUFFER_PAGE_SIZE, 500))
    # id > '': a row with a NULL or empty id (quarantined by the fold, listed on the overview)
    # has nothing a link or a cursor can carry; the page shows every other row.
    base = BufferEntry.objects.filter(owner_id=viewer.id, id__gt="").only(*BUFFER_FIELDS)
    forward = after is not None
    if after:
        qs = base.filter(_after(*_decoded(after))).order_by("timestamp", "created_at", "id")
    else:
        qs = base.order_by("-timestamp", "-created_at", "-id")
        if before:
            qs = qs.filter(_before(*_decoded(before)))
    needle = q.casefold() if q else None
    filtered = bool(types or needle or uses)

    def matches(rendered: RenderedEntry) -> bool:
        if types and rendered.type not in types:
            return False
        if uses and uses not in names_in(rendered):
            return False
        return not needle or needle in (rendered.line or rendered.undeliverable or "").casefold()

    picked: list[RenderedEntry] = []
    visited = 0
    step = limit if not filtered else max(limit * 4, 200)
    offset = 0
    # What lies past the scan, in its own direction: None when unknown (the page filled up
    # or the scan budget ran out), False when the rows ran out with no further match.
    more_ahead: bool | None = None
    while len(picked) < limit and visited < scan_limit:
        chunk = list(qs[offset : offset + step])
        offset += step
        visited += len(chunk)
        for entry in chunk:
            rendered = render_entry(entry, viewer)
            if not matches(rendered):
                continue
            picked.append(rendered)
            if len(picked) == limit:
                break
        if len(chunk) < step and len(picked) < limit:
            more_ahead = False
            break
    if not forward:
        picked.reverse()
    page = BufferPage(entries=picked, rows_visited=visited)
    if picked:
        first, last = picked[0], picked[-1]
        older_rows = base.filter(_before(first.timestamp, first.created_at, first.id)).order_by(
            "-timestamp", "-created_at", "-id"
        )
        newer_rows = base.filter(_after(last.timestamp, last.created_at, last.id)).order_by(
            "timestamp", "created_at", "id"
        )
        # Paging links lead to a page with something on it: with filters on, a link needs a
        # further row that passes them, not merely a further row.
        known_older = None if forward else more_ahead
        known_newer = more_ahead if forward else None
        has_older, read_older = _has_match(older_rows, viewer, matches, filtered, known_older)
        has_newer, read_newer = _has_match(newer_rows, viewer, matches, filtered, known_newer)
        page.rows_visited += read_older + read_newer
        page.older = _cursor_of(first) if has_older else None
        page.newer = _cursor_of(last) if has_newer else None
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


@dataclass(frozen=True)
class LineLinks:
    """What one buffer line ties to in the other panels: its session, the aliases it prints."""

    entry: RenderedEntry
    session_key: str
    alias_targets: tuple[str, ...]  # the entities named in it, the viewer itself left out


def line_links(viewer: Viewer, entry_id: str) -> LineLinks:
    entry = get_entry(viewer, entry_id)
    return LineLinks(
        entry=entry,
        session_key=session_key_of(entry.conversation_id, entry.location_id),
        alias_targets=tuple(i for i in names_in(entry) if i != viewer.id),
    )


def get_entry(viewer: Viewer, entry_id: str) -> RenderedEntry:
    entry = BufferEntry.objects.filter(id=entry_id, owner_id=viewer.id).only(*BUFFER_FIELDS).first()
    if entry is None:
        raise NotFound(f"{viewer.id} holds no memory with id {entry_id!r}", field="entry_id")
    return render_entry(entry, viewer)
