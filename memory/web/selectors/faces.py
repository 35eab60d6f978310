"""Long-term memory as a viewer has it: the faces panel, one entry by id with its notes."""

from __future__ import annotations

from dataclasses import dataclass, field

from memory.engine.errors import NotFound
from memory.engine.longterm.reader import FaceItem, FacesAnswer, get_long_term_entry, viewer_faces


@dataclass
class FaceView:
    """One long-term entry as a face panel row: where it stands and why."""

    item: FaceItem
    state: str  # "default" | "shadowed" | "superseded"
    shadowed_by: str | None = None
    superseded_by: str | None = None
    undeliverable: str | None = None
    absorbed: list[FaceView] = field(
        default_factory=list
    )  # superseded members, beside their rollup


@dataclass
class FacesView:
    rows: list[FaceView]
    answer: FacesAnswer
    include_shadowed: bool


def faces_view(viewer_id: str, *, include_shadowed: bool = False) -> FacesView:
    """The viewer's long-term faces; superseded entries sit next to the rollup that absorbed them."""
    answer = viewer_faces(viewer_id, include_shadowed=include_shadowed)
    shadowed = dict(answer.shadowed or {})
    superseded = dict(answer.superseded or {})
    undeliverable = dict(answer.undeliverable or {})
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
        )
    rows: list[FaceView] = []
    for view in views.values():
        rollup = views.get(view.superseded_by) if view.superseded_by else None
        if rollup is not None and rollup is not view:
            rollup.absorbed.append(view)
        else:
            rows.append(view)
    return FacesView(rows=rows, answer=answer, include_shadowed=include_shadowed)


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
    abstracted_into: str | None = None  # this entry's own per-row mark


def _ref(entry_id: str) -> dict:
    """An id as {"id", "title"}: the engine names rollups and members by id alone."""
    return {"id": entry_id, "title": None}


def long_term_entry(viewer_id: str, entry_id: str) -> LongTermEntryView:
    """get-by-id always delivers (shadowed or superseded too), with the notes saying why."""
    try:
        answer = get_long_term_entry(viewer_id, entry_id)
    except NotFound:
        # The page and the API name the entry the way the buffer's lookup does.
        raise NotFound(
            f"{viewer_id} holds no memory with id {entry_id!r}", field="entry_id"
        ) from None
    return LongTermEntryView(
        item=answer.item,
        notes=list(answer.notes),
        rollup=_ref(answer.rollup) if answer.rollup is not None else None,
        members=[
            {
                **_ref(m),
                "kind": answer.member_marks.get(m, (None, None))[0],
                "abstracted_into": answer.member_marks.get(m, (None, None))[1],
            }
            for m in answer.members
        ],
        abstracted_into=answer.abstracted_into,
    )
