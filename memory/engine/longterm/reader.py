"""Long-term memory read faces over the database (seed 004; PRODUCT.md §6, issue 4).

The pure engine (`memory.engine.longterm.shadowing`, `memory.engine.longterm.faces`) decides what stands on which face; this
module only feeds it from the store and hydrates bodies for the viewer. It never writes.

One viewer's read is four queries: the viewer row, its layer subscriptions (in position
order), the headers and bodies of its home and subscribed layers' entries, and the
abstraction edges whose members are among those entries. `rows_visited` is the exact number of
rows those queries returned, so the bench can compare it with a plain listing.

The delivery probe. `buffer.v2.hydrate` is total over strings (it renders an unknown or missing id
as "an unfamiliar figure" rather than failing), so "tries to render the body" is defined as:
- hydrate raises (Undeliverable carries its reason; anything else is reported by class and
  message, because a read face must disclose, never crash);
- the body is empty or only whitespace: there is nothing to deliver;
- a tag names no entity (`entity@[words]` or a bare `entity@`): whoever was meant is lost, and
  rendering it as a stranger would state something the author never wrote.
The rendered text is kept, so each body is hydrated exactly once per read.

Search matches the hydrated body (what the viewer reads), never the stored one: a stored body
holds entity ids, and a search for an id must not reveal which entries mention it.
"""

from __future__ import annotations

import gc
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

from memory.active_save import among, scoped_cursor, scoped_rows
from memory.engine.buffer import Undeliverable
from memory.engine.buffer.v2 import find_tags, hydrate
from memory.engine.errors import NotFound
from memory.engine.knowledge import Viewer, resolve_viewer
from memory.engine.longterm import faces as facelib
from memory.engine.longterm.names import NameWarning, same_name_after_trim
from memory.engine.longterm.shadowing import (
    MEMORY_SEARCH_SHADOWED_TAG,
    MEMORY_SEARCH_SUPERSEDED_TAG,
    EntryHeader,
    heading_of,
    shadow_key_of,
)
from memory.engine.newest import chunks
from memory.engine.scopes import home_scope, layer_scope
from memory.models import AbstractionEdge, BufferEntry, LayerSubscription, LedgerEntry

_ENTITY_TAG = "entity@"
# Cheap pre-filter for a tag that names no entity: the last `entity@` of a run followed by `[`
# or by nothing an id can start with. It may over-match (text inside a tag's words); the
# scanner hydrate uses then decides, so only suspicious bodies pay for a second scan.
_MAYBE_IDLESS = re.compile(r"entity@(?:\[|(?!entity@)(?![^\s\[\]@]*\[[^\[\]]*\])(?![\w-]))")
# Rows fetched per round trip: big enough that 100k entries cost ~50 fetches, small enough
# that a huge store never holds its whole result set twice in driver buffers.
_CHUNK = 2000
# Viewers (and scopes) named in one IN list: SQLite's parameter limit, with room to spare.
_IDS_PER_QUERY = 500


# Not frozen: a frozen dataclass sets each field through object.__setattr__, and a 100k-entry
# face builds 100k of these.
@dataclass(slots=True)
class FaceItem:
    id: str
    scope: str
    slug: str
    title: str  # the shadow key: committed name, else the slug's last segment
    body: str  # hydrated for the viewer; "" when undeliverable (the notes say why)
    tags: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def heading(self) -> str:
        """How a page names this entry to a person (shadowing.heading_of)."""
        return heading_of(self.title, self.id, self.body)


@dataclass(frozen=True, slots=True)
class FacesAnswer:
    viewer_id: str
    default: list[FaceItem]
    shadowed: dict[str, str]  # shadowed id -> the home entry carrying its name
    superseded: dict[str, str]  # member id -> rollup id
    withheld: list[str]
    undeliverable: dict[str, str]  # id -> reason
    items: list[FaceItem]  # the listing: the default face, or everything on it with tags
    rows_visited: int
    # Entries stored before names were trimmed that read as one name (longterm.names).
    name_warnings: list[NameWarning] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class EntryAnswer:
    item: FaceItem
    notes: list[str]
    rollup: str | None  # the rollup that absorbed this entry
    members: list[str]  # what this entry absorbed, when it is a rollup (buffer and ledger ids)
    shadowed_by: str | None = None  # the home entry whose name retires this one
    shadows: list[str] = field(default_factory=list)  # what this entry's name retires
    # Each member's kind ("buffer" / "ledger") and its own per-row abstracted_into mark (seed
    # 003, rule 10: abstract() writes it on every absorbed row beside the edge).
    member_marks: dict[str, tuple[str, str | None]] = field(default_factory=dict)
    abstracted_into: str | None = None  # this entry's own per-row mark


@dataclass(slots=True)
class _Read:
    viewer: Viewer
    headers: list[EntryHeader]
    by_id: dict[str, EntryHeader]
    rendered: dict[str, str]  # id -> hydrated body (deliverable entries only)
    faces: facelib.Faces
    rows_visited: int


def _probe(content: str, viewer: Viewer) -> tuple[str | None, str | None]:
    """(rendered, None) when the body delivers, else (None, reason)."""
    if not content.strip():
        return None, "the body is empty"
    if _ENTITY_TAG not in content:
        # Without a tag hydrate only swaps quotes and capitalises: it cannot fail.
        return hydrate(content, viewer), None
    # find_tags is the scanner hydrate itself uses; a second regex here could disagree with it.
    if _MAYBE_IDLESS.search(content) and any(not tag.id for tag in find_tags(content)):
        return None, "a tag names no entity (entity@ without an id)"
    try:
        return hydrate(content, viewer), None
    except Undeliverable as exc:
        return None, exc.reason
    except Exception as exc:  # disclosed on the face, never an error page
        return None, f"{exc.__class__.__name__}: {exc}"


@contextmanager
def _acyclic_burst() -> Iterator[None]:
    """Pause the cyclic garbage collector while a read builds its ~3 objects per entry: they
    form no cycles (reference counting frees them), yet each generation-2 pass rescans the
    whole growing heap, which cost ~40% of a 100k-entry read in bench/bench_faces.py.
    Restored on exit, and left alone when the caller had already disabled it."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _raw_rows(sql: str, params: Sequence[object]) -> Iterator[tuple]:
    """A raw statement's rows (on the active save), fetched in chunks straight from the cursor:
    no model instances, no per-row converters (a third of the read time at 100k rows) and no
    full-result cache. Only for columns whose raw driver values are already what we use
    (text, and a boolean read for its truth)."""
    with scoped_cursor() as cursor:
        cursor.execute(sql, params)
        while chunk := cursor.fetchmany(_CHUNK):
            yield from chunk


def _read(viewer: str | Viewer) -> _Read:
    viewer = resolve_viewer(viewer)
    return _read_each([viewer])[viewer.id]


@dataclass(slots=True)
class _Reading:
    """One viewer's read as the rows stream in."""

    viewer: Viewer
    write_scope: str
    layer_order: list[str]
    rows: int = 1  # the viewer row
    headers: list[EntryHeader] = field(default_factory=list)
    withheld: set[str] = field(default_factory=set)
    rendered: dict[str, str] = field(default_factory=dict)
    undeliverable: dict[str, str] = field(default_factory=dict)
    edges: list[tuple[str, str]] = field(default_factory=list)


def _read_each(viewers: Sequence[Viewer], at: str | None = None) -> dict[str, _Read]:
    """The read of each viewer, made for all of them at once: their subscriptions in one
    query, the entries of every scope they read streamed once (a layer many subscribe to is
    read once and delivered to each), their edges in one query, per chunk of viewers. `at`
    (a world time in omnia's own form): only the entries written at or before it, the
    memory as it stood then."""
    readings = {v.id: _Reading(v, home_scope(v.id), []) for v in viewers}
    ids = list(readings)
    # Raw statements, as the querysets wrote them: a viewer page's faces panel makes these
    # reads, and the ORM built each in longer than the database answered it.
    for chunk in chunks(ids, _IDS_PER_QUERY):
        who, params = among("entity_id", list(chunk))
        for entity_id, layer_id in scoped_rows(
            f"SELECT entity_id, layer_id FROM {LayerSubscription._meta.db_table} "
            f"WHERE game_save_id = %(save)s AND {who} ORDER BY entity_id, position",
            params,
        ):
            reading = readings[entity_id]
            reading.rows += 1
            reading.layer_order.append(layer_scope(layer_id))
    readers: dict[str, list[_Reading]] = {}
    for reading in readings.values():
        for scope in (reading.write_scope, *reading.layer_order):
            readers.setdefault(scope, []).append(reading)
    for chunk in chunks(list(readers), _IDS_PER_QUERY):
        scopes, params = among("scope_id", list(chunk))
        if at is not None:
            scopes, params = f"{scopes} AND timestamp <= %s", [*params, at]
        entries = (
            "SELECT id, scope_id, slug, name, draft_name, withheld, content "
            f"FROM {LedgerEntry._meta.db_table} WHERE game_save_id = %(save)s AND {scopes}"
        )
        for entry_id, scope, slug, name, draft_name, is_withheld, content in _raw_rows(
            entries, params
        ):
            header = EntryHeader(entry_id, scope, slug, name, draft_name)
            for reading in readers[scope]:
                reading.rows += 1
                reading.headers.append(header)
                if is_withheld:
                    reading.withheld.add(entry_id)
                text, reason = _probe(content, reading.viewer)
                if reason is None:
                    reading.rendered[entry_id] = text  # type: ignore[assignment]
                else:
                    reading.undeliverable[entry_id] = reason
    # Rollups always land in their owner's home, so edges whose members are ledger entries of
    # a read are its viewer's own; filtering by owner keeps the entry ids off the query.
    holding = [reading.viewer.id for reading in readings.values() if reading.headers]
    for chunk in chunks(holding, _IDS_PER_QUERY):
        members = {v: {h.id for h in readings[v].headers} for v in chunk}
        for owner, member, rollup in (
            AbstractionEdge.objects.filter(owner_id__in=chunk, member_kind="ledger")
            .values_list("owner_id", "member_id", "rollup_id")
            .iterator(chunk_size=_CHUNK)
        ):
            reading = readings[owner]
            reading.rows += 1
            if member in members[owner]:
                reading.edges.append((member, rollup))
    return {viewer_id: _finished(reading) for viewer_id, reading in readings.items()}


def _finished(r: _Reading) -> _Read:
    faces = facelib.compute_faces(
        r.headers, r.write_scope, r.layer_order, r.edges, r.withheld, r.undeliverable.get
    )
    return _Read(
        viewer=r.viewer,
        headers=r.headers,
        by_id={h.id: h for h in r.headers},
        rendered=r.rendered,
        faces=faces,
        rows_visited=r.rows,
    )


def _tags(faces: facelib.Faces, entry_id: str) -> list[str]:
    # Two facts, two tags, in the same order as the pure engine's listing rows.
    tags = []
    if entry_id in faces.shadowed:
        tags.append(MEMORY_SEARCH_SHADOWED_TAG)
    if entry_id in faces.superseded:
        tags.append(MEMORY_SEARCH_SUPERSEDED_TAG)
    return tags


def _item(read: _Read, entry_id: str, *, on_default: bool = False) -> FaceItem:
    """`on_default`: the caller knows the entry stands on the default face, which by
    definition carries no tags and no notes, so the lookups are skipped (100k items)."""
    h = read.by_id[entry_id]
    if on_default:
        return FaceItem(h.id, h.scope, h.slug, shadow_key_of(h), read.rendered[entry_id], [], [])
    return FaceItem(
        id=h.id,
        scope=h.scope,
        slug=h.slug,
        title=shadow_key_of(h),
        body=read.rendered.get(entry_id, ""),
        tags=_tags(read.faces, entry_id),
        notes=facelib.get_by_id(read.faces, entry_id)[1],
    )


def _listing(read: _Read, include_shadowed: bool) -> list[FaceItem]:
    return [
        _item(read, row.id) for row in facelib.listing(read.faces, read.headers, include_shadowed)
    ]


def viewer_faces(viewer: str | Viewer, *, include_shadowed: bool = False) -> FacesAnswer:
    """Every face of one viewer's long-term memory. Unknown viewer -> NotFound."""
    with _acyclic_burst():
        read = _read(viewer)
        faces = read.faces
        default = [_item(read, i, on_default=True) for i in faces.default]
        items = default if not include_shadowed else _listing(read, include_shadowed=True)
    return FacesAnswer(
        viewer_id=read.viewer.id,
        default=default,
        shadowed=dict(faces.shadowed),
        superseded=dict(faces.superseded),
        withheld=[i for i in faces.scopes if i in faces.withheld],
        undeliverable=dict(faces.undeliverable),
        items=items,
        rows_visited=read.rows_visited,
        name_warnings=same_name_after_trim(read.headers),
    )


def index_lines(viewer: Viewer | str) -> list[str]:
    """The long-term section of the prompt: `- title: body`, default face only. No ids and no
    tags: the prompt speaks to the character, who has no use for either."""
    return [line for _entry_id, line in index_entries(viewer)]


def index_entries(viewer: Viewer | str) -> list[tuple[str, str]]:
    """index_lines with the id of the entry each line comes from (the leak report links a
    finding to it)."""
    viewer = resolve_viewer(viewer)
    return index_entries_of_each([viewer])[viewer.id]


def index_entries_of_each(
    viewers: Sequence[Viewer], at: str | None = None
) -> dict[str, list[tuple[str, str]]]:
    """index_entries of many viewers, read at once (the prompts of a leak rescan); with `at`,
    of the entries written by then."""
    with _acyclic_burst():
        reads = _read_each(viewers, at)
    out: dict[str, list[tuple[str, str]]] = {}
    for viewer_id, read in reads.items():
        lines = out[viewer_id] = []
        for row in facelib.index_rows(read.faces, read.headers):
            body = read.rendered[row.id]
            # An imported omnia row has no name and a slug made of its id, so its title IS its
            # id; the prompt must never carry ids, so such a row shows its body alone.
            lines.append((row.id, f"- {body}" if row.title == row.id else f"- {row.title}: {body}"))
    return out


def search_long_term(
    viewer_id: str, query: str, *, include_shadowed: bool = False
) -> list[FaceItem]:
    with _acyclic_burst():
        read = _read(viewer_id)
    hits = facelib.search(read.faces, read.headers, read.rendered, query, include_shadowed)
    return [_item(read, row.id) for row in hits]


def resolve_slug(viewer_id: str, slug: str, *, include_shadowed: bool = False) -> FaceItem | None:
    with _acyclic_burst():
        read = _read(viewer_id)
    found = facelib.resolve_bare_slug(read.faces, read.headers, slug, include_shadowed)
    return None if found is None else _item(read, found)


def get_long_term_entry(viewer_id: str, entry_id: str) -> EntryAnswer:
    """Delivery by id always proceeds, with notes for whatever keeps it off the default face.
    An id outside the viewer's home and layers -> NotFound."""
    with _acyclic_burst():
        read = _read(viewer_id)
    try:
        _, notes = facelib.get_by_id(read.faces, entry_id)
    except KeyError:
        raise NotFound(f"no long-term entry {entry_id!r} for {read.viewer.id!r}") from None
    edges = list(
        AbstractionEdge.objects.filter(rollup_id=entry_id)
        .order_by("member_id")
        .values_list("member_id", "member_kind")
    )
    # The per-row marks, by primary key: this entry's and its ledger members' in one query,
    # its buffer members' in another (only when it has any).
    ledger = dict(
        LedgerEntry.objects.filter(
            id__in=[entry_id, *(m for m, k in edges if k == "ledger")]
        ).values_list("id", "abstracted_into")
    )
    buffer_ids = [m for m, k in edges if k == "buffer"]
    buffer = (
        dict(BufferEntry.objects.filter(id__in=buffer_ids).values_list("id", "abstracted_into"))
        if buffer_ids
        else {}
    )
    return EntryAnswer(
        item=_item(read, entry_id),
        notes=notes,
        rollup=read.faces.superseded.get(entry_id),
        members=[m for m, _kind in edges],
        member_marks={m: (k, (buffer if k == "buffer" else ledger).get(m)) for m, k in edges},
        abstracted_into=ledger.get(entry_id),
        shadowed_by=read.faces.shadowed.get(entry_id),
        shadows=[i for i in read.faces.scopes if read.faces.shadowed.get(i) == entry_id],
    )
