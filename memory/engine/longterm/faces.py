"""The read faces of long-term memory: one answer to "what is on the default face", used by the
four seats (index rows, search, listing, bare-slug resolution) and by get-by-id (seed 004;
PRODUCT.md §6).

`compute_faces` composes the pieces once: supersession from the consolidation edges, the
caller's withheld set, the delivery probe, and shadowing, whose carriers must stand on the
default face (law 2). Every seat then reads the same `Faces`, so they cannot drift apart.

Decisions the seed leaves open:
- Reading order: the write home first, then the layers in subscription order; within a scope by
  id (ascending string order), which is stable under any scan order.
- `include_shadowed` brings back exactly what the shadowing and supersession rules took off,
  tagged. Withheld (retracted or flagged) and undeliverable entries stay off every enumeration
  face even then: withholding is a moderation decision that an evidence face must not override,
  and an undeliverable entry has no body to show. Both stay reachable by id, with a note, and
  `Faces` lists them for the inspector.
- A bare slug matches a header's slug exactly; the first match in reading order wins, so the
  home answers before the layers.

Pure Python: the DB layer hands in plain headers, edges and sets.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass

from memory.engine.errors import InvalidInput
from memory.engine.longterm.shadowing import (
    MEMORY_SEARCH_SHADOWED_TAG,
    MEMORY_SEARCH_SUPERSEDED_TAG,
    EntryHeader,
    derive_shadowed_set,
    derive_superseded_set,
    memory_shadowed_note,
    memory_superseded_note,
    shadow_key_of,
)

MEMORY_WITHHELD_TAG = "[withheld]"
MEMORY_UNDELIVERABLE_TAG = "[undeliverable]"


@dataclass(frozen=True, slots=True)
class Faces:
    default: list[str]  # ids on the default face, in reading order
    shadowed: dict[str, str]  # shadowed id -> the write-home id carrying its name
    superseded: dict[str, str]  # member id -> rollup id
    withheld: set[str]
    undeliverable: dict[str, str]  # id -> why its body cannot be rendered
    scopes: dict[str, str]  # every id -> its scope, in reading order


@dataclass(frozen=True, slots=True)
class IndexRow:
    id: str
    title: str
    tags: tuple[str, ...] = ()

    @property
    def line(self) -> str:
        return " ".join((f"- {self.title}", *self.tags))


@dataclass(frozen=True, slots=True)
class FaceRow:
    """A listing row or a search hit."""

    id: str
    scope: str
    slug: str
    title: str
    tags: tuple[str, ...] = ()


class FacesError(InvalidInput):
    """The headers cannot be laid out: a duplicate id, or a scope the session does not read."""


def _scope_ranks(write_scope: str | None, layer_order: Iterable[str]) -> dict[str, int]:
    ranks: dict[str, int] = {}
    if write_scope is not None:
        ranks[write_scope] = 0
    for scope in layer_order:
        # A layer listed twice, or the home listed as a layer, keeps its first (earliest) seat.
        ranks.setdefault(scope, len(ranks))
    return ranks


def compute_faces(
    headers: Iterable[EntryHeader],
    write_scope: str | None,
    layer_order: Iterable[str],
    edges: Iterable[tuple[str, str]],
    withheld: set[str] | frozenset[str],
    deliverable: Callable[[str], str | None],
) -> Faces:
    """Lay out the faces for one session. `edges` are (member, rollup) abstracted_into pairs;
    `deliverable(id)` answers None when the entry's body renders, else the reason. The probe is
    called once per header."""
    headers = list(headers)
    ranks = _scope_ranks(write_scope, layer_order)
    seen: set[str] = set()
    for h in headers:
        if h.id in seen:
            raise FacesError(f"duplicate entry id {h.id!r}")
        if h.scope not in ranks:
            raise FacesError(
                f"entry {h.id!r} is in scope {h.scope!r}, which this session does not read"
            )
        seen.add(h.id)

    superseded = {
        member: rollup for member, rollup in derive_superseded_set(edges).items() if member in seen
    }
    withheld_here = {i for i in withheld if i in seen}
    undeliverable: dict[str, str] = {}
    for h in headers:
        reason = deliverable(h.id)
        if reason is not None:
            undeliverable[h.id] = reason

    def off_default(entry_id: str) -> bool:
        return entry_id in withheld_here or entry_id in superseded or entry_id in undeliverable

    # Law 2: one predicate for the three ways a carrier fails to stand on the default face.
    shadowed = derive_shadowed_set(headers, write_scope, excluded=off_default)

    headers.sort(key=lambda h: (ranks[h.scope], h.id))
    scopes = {h.id: h.scope for h in headers}
    default = [i for i in scopes if not off_default(i) and i not in shadowed]
    return Faces(
        default=default,
        shadowed=shadowed,
        superseded=superseded,
        withheld=withheld_here,
        undeliverable=undeliverable,
        scopes=scopes,
    )


def _face_ids(faces: Faces, include_shadowed: bool) -> Iterator[str]:
    if not include_shadowed:
        yield from faces.default
        return
    for entry_id in faces.scopes:
        if entry_id not in faces.withheld and entry_id not in faces.undeliverable:
            yield entry_id


def _tags(faces: Faces, entry_id: str) -> tuple[str, ...]:
    # Two facts, two tags: an entry both shadowed and superseded discloses both.
    tags: list[str] = []
    if entry_id in faces.shadowed:
        tags.append(MEMORY_SEARCH_SHADOWED_TAG)
    if entry_id in faces.superseded:
        tags.append(MEMORY_SEARCH_SUPERSEDED_TAG)
    return tuple(tags)


def _by_id(headers: Iterable[EntryHeader]) -> dict[str, EntryHeader]:
    return {h.id: h for h in headers}


def _face_row(faces: Faces, h: EntryHeader) -> FaceRow:
    return FaceRow(
        id=h.id, scope=h.scope, slug=h.slug, title=shadow_key_of(h), tags=_tags(faces, h.id)
    )


def index_rows(
    faces: Faces, headers: Iterable[EntryHeader], include_shadowed: bool = False
) -> list[IndexRow]:
    """The long-term memory index injected into the prompt; titles are the shadow keys, so "same
    name" means what a reader of this index would call the same name."""
    by_id = _by_id(headers)
    return [
        IndexRow(id=i, title=shadow_key_of(by_id[i]), tags=_tags(faces, i))
        for i in _face_ids(faces, include_shadowed)
    ]


def listing(
    faces: Faces, headers: Iterable[EntryHeader], include_shadowed: bool = False
) -> list[FaceRow]:
    by_id = _by_id(headers)
    return [_face_row(faces, by_id[i]) for i in _face_ids(faces, include_shadowed)]


def search(
    faces: Faces,
    headers: Iterable[EntryHeader],
    bodies: Mapping[str, str],
    query: str,
    include_shadowed: bool = False,
) -> list[FaceRow]:
    """Case-insensitive substring match over the committed name, the slug and the body. A draft
    name is not searched: like shadowing, search reads the committed header face."""
    by_id = _by_id(headers)
    needle = query.casefold()
    hits: list[FaceRow] = []
    for i in _face_ids(faces, include_shadowed):
        h = by_id[i]
        if (
            (h.name is not None and needle in h.name.casefold())
            or needle in h.slug.casefold()
            or needle in bodies.get(i, "").casefold()
        ):
            hits.append(_face_row(faces, h))
    return hits


def resolve_bare_slug(
    faces: Faces, headers: Iterable[EntryHeader], slug: str, include_shadowed: bool = False
) -> str | None:
    """The entry a bare slug names: the first on the face in reading order, so the write home
    answers before the layers, and the layers answer in subscription order."""
    candidates = {h.id for h in headers if h.slug == slug}
    if not candidates:
        return None
    for i in _face_ids(faces, include_shadowed):
        if i in candidates:
            return i
    return None


def memory_withheld_note() -> str:
    return f"{MEMORY_WITHHELD_TAG} retracted or flagged; delivered by id as evidence"


def memory_undeliverable_note(reason: str) -> str:
    return f"{MEMORY_UNDELIVERABLE_TAG} the body cannot be rendered: {reason}"


def get_by_id(faces: Faces, entry_id: str) -> tuple[str, list[str]]:
    """Delivery by id always proceeds: being off the default face is disclosed, never refused.
    Raises KeyError for an id the session does not read."""
    if entry_id not in faces.scopes:
        raise KeyError(entry_id)
    notes: list[str] = []
    if entry_id in faces.shadowed:
        notes.append(memory_shadowed_note(faces.shadowed[entry_id]))
    if entry_id in faces.superseded:
        notes.append(memory_superseded_note(faces.superseded[entry_id]))
    if entry_id in faces.withheld:
        notes.append(memory_withheld_note())
    if entry_id in faces.undeliverable:
        notes.append(memory_undeliverable_note(faces.undeliverable[entry_id]))
    return entry_id, notes
