"""Long-term memory as a viewer has it: the faces panel, one entry by id with its notes.

The engine answers with ids (shadowed id -> carrier id, member id -> rollup id); a person
reads titles and reasons. This module puts the two together: each shadowed entry under the
entry that shadows it with the reason in words, what each carrier replaces, superseded and
withheld entries by title, and a warning when two entries on top share a name.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from memory.engine.buffer.rendered import BUFFER_FIELDS, render_entry
from memory.engine.errors import NotFound
from memory.engine.knowledge import Viewer, get_viewer
from memory.engine.longterm.reader import FaceItem, FacesAnswer, get_long_term_entry, viewer_faces
from memory.engine.longterm.shadowing import EntryHeader, heading_of, shadow_key_of
from memory.models import BufferEntry, Layer, LedgerEntry

HOME_PREFIX = "home:"
LAYER_PREFIX = "layer:"


@dataclass
class Ref:
    """Another entry, as a person names it: its title and where it lives."""

    id: str
    title: str
    scope: str = ""
    where: str = ""  # the scope in words: "your own notes", "World canon"
    slug: str = ""


@dataclass
class FaceView:
    """One long-term entry as a face panel row: where it stands and why."""

    item: FaceItem
    state: str  # "default" | "shadowed" | "superseded"
    shadowed_by: str | None = None
    superseded_by: str | None = None
    undeliverable: str | None = None
    absorbed: list[FaceView] = field(default_factory=list)  # superseded, beside their rollup
    shadowed: list[FaceView] = field(default_factory=list)  # shadowed, under their carrier
    replaces: list[Ref] = field(default_factory=list)  # what this entry's name retires
    reason: str = ""  # why it is off the default face, in words
    same_name: list[Ref] = field(default_factory=list)  # others on top under this name
    where: str = ""
    superseded_by_title: str | None = None


@dataclass
class FacesView:
    rows: list[FaceView]
    answer: FacesAnswer
    include_shadowed: bool
    withheld: list[Ref] = field(default_factory=list)
    on_top: int = 0  # entries on the default face, whatever is shown beside them
    shadowed_count: int = 0
    superseded_count: int = 0


def _where(scope: str, viewer_id: str, layer_titles: dict[str, str]) -> str:
    if scope == f"{HOME_PREFIX}{viewer_id}":
        return "your own notes"
    if scope.startswith(LAYER_PREFIX):
        layer_id = scope[len(LAYER_PREFIX) :]
        return layer_titles.get(layer_id) or layer_id
    return scope


def _layer_titles(scopes: Iterable[str]) -> dict[str, str]:
    ids = {s[len(LAYER_PREFIX) :] for s in scopes if s.startswith(LAYER_PREFIX)}
    if not ids:
        return {}
    return dict(Layer.objects.filter(id__in=ids).values_list("id", "title"))


def _ledger_refs(ids: Iterable[str]) -> dict[str, tuple[str, str]]:
    """id -> (title, scope) for ledger entries, one query; titles are the shadow keys, the name
    the faces themselves use (an imported row's, its id, as its first words: heading_of)."""
    wanted = set(ids)
    if not wanted:
        return {}
    rows = LedgerEntry.objects.filter(id__in=wanted).values_list(
        "id", "scope_id", "slug", "name", "content"
    )
    return {
        i: (heading_of(shadow_key_of(EntryHeader(i, scope, slug, name)), i, content), scope)
        for i, scope, slug, name, content in rows
    }


def entry_titles(ids: Iterable[str]) -> dict[str, str]:
    """Long-term entries' titles by id (for a page that names a rollup by its id)."""
    return {i: title for i, (title, _scope) in _ledger_refs(ids).items()}


def _same_name(rows: list[FaceView], viewer_id: str, titles: dict[str, str]) -> None:
    """Entries on top under one name: the prompt's index shows them as two lines with one
    title, which no reader can tell apart. Each gets the others named beside it."""
    by_title: dict[str, list[FaceView]] = {}
    for row in rows:
        if row.state == "default":
            by_title.setdefault(row.item.title, []).append(row)
    for group in by_title.values():
        if len(group) < 2:
            continue
        for row in group:
            row.same_name = [
                Ref(o.item.id, o.item.heading, o.item.scope, o.where, o.item.slug)
                for o in group
                if o is not row
            ]


def faces_view(viewer: str | Viewer, *, include_shadowed: bool = False) -> FacesView:
    """The viewer's long-term faces: shadowed entries under the entry that shadows them,
    superseded ones beside the rollup that absorbed them, each with its reason."""
    answer = viewer_faces(viewer, include_shadowed=include_shadowed)
    viewer_id = answer.viewer_id
    shadowed = dict(answer.shadowed or {})
    superseded = dict(answer.superseded or {})
    undeliverable = dict(answer.undeliverable or {})
    shown = {item.id for item in answer.items}
    # Titles and scopes of what the listing does not carry: shadowed entries when hidden,
    # withheld ones, and rollups. One query, and none when there is nothing to name.
    refs = _ledger_refs({*shadowed, *answer.withheld, *superseded.values()} - shown)
    layer_titles = _layer_titles(
        {item.scope for item in answer.items} | {scope for _t, scope in refs.values()}
    )

    def ref(entry_id: str) -> Ref:
        title, scope = refs.get(entry_id, (entry_id, ""))
        return Ref(entry_id, title, scope, _where(scope, viewer_id, layer_titles))

    views: dict[str, FaceView] = {}
    for item in answer.items:
        state = (
            "shadowed"
            if item.id in shadowed
            else "superseded"
            if item.id in superseded
            else "default"
        )
        views[item.id] = FaceView(
            item=item,
            state=state,
            shadowed_by=shadowed.get(item.id),
            superseded_by=superseded.get(item.id),
            undeliverable=undeliverable.get(item.id),
            where=_where(item.scope, viewer_id, layer_titles),
        )
    for item_id, carrier_id in shadowed.items():
        carrier = views.get(carrier_id)
        if carrier is None:
            continue
        if item_id in views:
            shadow = views[item_id]
            shadow_ref = Ref(item_id, shadow.item.heading, shadow.item.scope, shadow.where)
        else:
            shadow_ref = ref(item_id)
        carrier.replaces.append(shadow_ref)
        if item_id in views:
            # Carriers always live in the viewer's own home (layers never shadow each other).
            views[item_id].reason = (
                f"Your own note “{carrier.item.heading}” replaces the {shadow_ref.where} entry "
                "of the same name."
            )
    for view in views.values():
        if view.superseded_by:
            rollup = views.get(view.superseded_by)
            view.superseded_by_title = (
                rollup.item.heading if rollup is not None else ref(view.superseded_by).title
            )
            view.reason = f"Rolled up into “{view.superseded_by_title}”."
    for carrier in views.values():
        carrier.replaces.sort(key=lambda r: (r.where, r.id))
    rows: list[FaceView] = []
    for view in views.values():
        rollup = views.get(view.superseded_by) if view.superseded_by else None
        carrier = views.get(view.shadowed_by) if view.shadowed_by else None
        if rollup is not None and rollup is not view:
            rollup.absorbed.append(view)
        elif carrier is not None and carrier is not view:
            carrier.shadowed.append(view)
        else:
            rows.append(view)
    _same_name(rows, viewer_id, layer_titles)
    withheld = [ref(i) for i in answer.withheld]
    return FacesView(
        rows=rows,
        answer=answer,
        include_shadowed=include_shadowed,
        withheld=withheld,
        on_top=len(answer.default),
        shadowed_count=len(shadowed),
        superseded_count=len(superseded),
    )


def face_maps(viewer_id: str) -> tuple[dict, dict, dict]:
    """(shadowed id -> shadowing id, member id -> rollup id, id -> undeliverable reason)."""
    answer = viewer_faces(viewer_id, include_shadowed=True)
    return dict(answer.shadowed), dict(answer.superseded), dict(answer.undeliverable)


def face_item_dict(item: FaceItem) -> dict:
    return {
        "id": item.id,
        "scope": item.scope,
        "slug": item.slug,
        "title": item.title,
        "body": item.body,
        "tags": list(item.tags or ()),
        "notes": list(item.notes or ()),
    }


@dataclass
class LongTermEntryView:
    item: FaceItem
    notes: list[str]
    rollup: dict | None  # {"id", "title"} of the rollup that absorbed this entry
    # {"id", "title", "kind", "abstracted_into"} of what this entry (a rollup) absorbed: each
    # member's own per-row mark, read from its row
    members: list[dict]
    shadowed_by: dict | None = None  # {"id", "title", "where"} of the entry that shadows it
    shadows: list[dict] = field(default_factory=list)  # {"id", "title", "where"} it replaces
    where: str = ""
    standing: list[str] = field(default_factory=list)  # where it stands, in words
    abstracted_into: str | None = None  # this entry's own per-row mark


def _member_titles(viewer_id: str, member_ids: list[str], ledger: dict) -> dict[str, str]:
    """Titles of a rollup's members: a ledger entry by its name, a buffer memory by the line
    its owner reads (the id only when the line cannot be rendered)."""
    buffer_ids = [m for m in member_ids if m not in ledger]
    titles = {m: ledger[m][0] for m in member_ids if m in ledger}
    if buffer_ids:
        viewer = get_viewer(viewer_id)
        for entry in BufferEntry.objects.filter(id__in=buffer_ids, owner_id=viewer_id).only(
            *BUFFER_FIELDS
        ):
            titles[entry.id] = render_entry(entry, viewer).line or entry.id
    return titles


def long_term_entry(viewer_id: str, entry_id: str) -> LongTermEntryView:
    """get-by-id always delivers (shadowed or superseded too), with the notes saying why, and
    every other entry it names (its rollup, its members, what it shadows) by title."""
    try:
        answer = get_long_term_entry(viewer_id, entry_id)
    except NotFound:
        # The page and the API name the entry the way the buffer's lookup does.
        raise NotFound(
            f"{viewer_id} holds no memory with id {entry_id!r}", field="entry_id"
        ) from None
    named = [*answer.shadows, *answer.members]
    named += [i for i in (answer.rollup, answer.shadowed_by) if i is not None]
    ledger = _ledger_refs(named)
    titles = _layer_titles([answer.item.scope, *(scope for _t, scope in ledger.values())])

    def ref(i: str) -> dict:
        title, scope = ledger.get(i, (i, ""))
        return {"id": i, "title": title, "where": _where(scope, viewer_id, titles)}

    members = _member_titles(viewer_id, answer.members, ledger)
    view = LongTermEntryView(
        item=answer.item,
        notes=list(answer.notes),
        rollup={"id": answer.rollup, "title": ref(answer.rollup)["title"]}
        if answer.rollup is not None
        else None,
        members=[
            {
                "id": m,
                "title": members.get(m, m),
                "kind": answer.member_marks.get(m, (None, None))[0],
                "abstracted_into": answer.member_marks.get(m, (None, None))[1],
            }
            for m in answer.members
        ],
        shadowed_by=ref(answer.shadowed_by) if answer.shadowed_by else None,
        shadows=[ref(i) for i in answer.shadows],
        where=_where(answer.item.scope, viewer_id, titles),
        abstracted_into=answer.abstracted_into,
    )
    view.standing = _standing(view)
    return view


def _standing(view: LongTermEntryView) -> list[str]:
    """Where the entry stands, in sentences (the page links the titles beside them)."""
    said = []
    if view.shadowed_by:
        said.append(
            f"Off the default face: your own note “{view.shadowed_by['title']}” replaces this "
            f"{view.where} entry of the same name."
        )
    if view.shadows:
        places = sorted({s["where"] for s in view.shadows})
        said.append(
            f"Replaces the entr{'y' if len(view.shadows) == 1 else 'ies'} of the same name in "
            f"{' and '.join(places)}: the viewer reads this one instead."
        )
    if view.rollup:
        said.append(f"Off the default face: rolled up into “{view.rollup['title']}”.")
    return said
