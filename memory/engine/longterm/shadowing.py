"""The write-home name rule, and supersession beside it (seed 004; PRODUCT.md §6).

When the session's write home already carries an entry by a given NAME, the read-only layers'
same-named entries leave the DEFAULT read face. Nothing is written, moved or deleted: a shadowed
entry stays readable by id and on the `include_shadowed` faces. Home entries are never shadowed,
layers never shadow each other, and a session with no write home derives the empty set.

Supersession is derived here too because it lands at the same four seats in the same shape: a
second answer to "what is on the default face" would be a drift seam. The two are orthogonal
(supersession is a same-scope data fact carried by consolidation edges, shadowing a cross-layer
fact of where this session writes), so an entry can be both, and each is disclosed separately.

Two laws authorize a shadow:
1. The NAME SOURCE is a committed header face. An uncommitted `draft_name` retires nothing.
2. The CARRIER must itself stand on the default face. Withheld, superseded and undeliverable
   are three ways of not standing there, so the caller passes them as one `excluded` predicate.
   A home entry replaced by a consolidation product is committed and deliverable yet off the
   default face; letting it shadow would take both same-named answers off every face at once.

Pure Python: the DB layer hands in plain headers and edges.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

MEMORY_SEARCH_SHADOWED_TAG = "[shadowed]"
MEMORY_SEARCH_SUPERSEDED_TAG = "[superseded]"


@dataclass(frozen=True, slots=True)
class EntryHeader:
    id: str
    scope: str
    slug: str
    name: str | None  # committed at the harvest boundary
    draft_name: str | None = None  # an in-session edit: never a shadow source, never a key


def shadow_key_of(h: EntryHeader) -> str:
    """The name an entry is known by on the read faces: its committed name, else the last
    segment of its slug (what the index row's own title is built from). Exact equality, no
    case folding; `draft_name` never takes part.

    Law 1 decision: a home entry without a committed name still carries its slug's last segment,
    because the slug is committed header data too and is exactly what a reader of the index sees
    as that entry's name. Only the uncommitted draft is barred.

    An empty (or blank) committed name falls back to the slug, as a missing one does: the doors
    store a blank name as none (longterm.names.committed_name); a row stored before is read
    the same way."""
    if h.name and not h.name.isspace():
        return h.name
    return h.slug.rsplit("/", 1)[-1]


def shadow_names_of(
    headers: Iterable[EntryHeader],
    write_scope: str | None,
    *,
    excluded: Callable[[str], bool] | None = None,
) -> dict[str, str]:
    """Name -> the write-home entry id carrying it. Lowest id wins among several carriers so the
    answer never depends on scan order. Excluded carriers (off the default face) carry nothing."""
    if write_scope is None:
        return {}
    names: dict[str, str] = {}
    for h in headers:
        if h.scope != write_scope or (excluded is not None and excluded(h.id)):
            continue
        key = shadow_key_of(h)
        current = names.get(key)
        if current is None or h.id < current:
            names[key] = h.id
    return names


def derive_shadowed_set(
    headers: Iterable[EntryHeader],
    write_scope: str | None,
    *,
    excluded: Callable[[str], bool] | None = None,
    shadow_names: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """Shadowed entry id -> the write-home entry id whose name retires it from the default face.

    A given `shadow_names` IS the name map (computed by the caller, perhaps from a listing this
    one does not contain); otherwise it is derived from these headers. No write home derives the
    empty set even when a map is given: that guarantee is what keeps a read-only layering
    byte-identical to a tree without this module."""
    if write_scope is None:
        return {}
    headers = list(headers)
    names = (
        shadow_names
        if shadow_names is not None
        else shadow_names_of(headers, write_scope, excluded=excluded)
    )
    if not names:
        return {}
    shadowed: dict[str, str] = {}
    for h in headers:
        # Only the write home's names count, so layers never shadow each other.
        if h.scope == write_scope:
            continue
        carrier = names.get(shadow_key_of(h))
        if carrier is not None:
            shadowed[h.id] = carrier
    return shadowed


def memory_shadowed_note(shadowing_id: str) -> str:
    """memory_get head note for a shadowed entry: disclosure, never refusal."""
    return (
        f"{MEMORY_SEARCH_SHADOWED_TAG} the write home's entry {shadowing_id} carries this "
        "entry's name; delivered by id as evidence"
    )


def derive_superseded_set(edges: Iterable[tuple[str, str]]) -> dict[str, str]:
    """Member id -> rollup id, from (member, rollup) abstracted_into edges. A member is absorbed
    at most once; should the store ever hold two edges for one member, the lowest rollup id
    answers so the result never depends on edge order."""
    superseded: dict[str, str] = {}
    for member, rollup in edges:
        current = superseded.get(member)
        if current is None or rollup < current:
            superseded[member] = rollup
    return superseded


def memory_superseded_note(rollup_id: str) -> str:
    """memory_get head note for a superseded entry: disclosure, never refusal."""
    return (
        f"{MEMORY_SEARCH_SUPERSEDED_TAG} consolidated into {rollup_id}; delivered by id as evidence"
    )


HEADING_WORDS = 8
_TAG_WORDS = re.compile(r"entity@[A-Za-z0-9_-]+\[([^\]]*)\]")


def heading_of(title: str, entry_id: str, text: str) -> str:
    """How a page names a long-term entry to a person: its title, except where the title is
    its id (an imported omnia row: no name, a slug made of its id, "ledger-ddd…-1796…"); then
    the first words of what it says, a tag read as the words it carries."""
    if title != entry_id:
        return title
    words = _TAG_WORDS.sub(r"\1", text).split()
    if not words:
        return "an untitled memory"
    return " ".join(words[:HEADING_WORDS]) + ("…" if len(words) > HEADING_WORDS else "")
