"""Long-term memory: a viewer's faces, one entry by id, search, slug resolution, and the
abstraction door (editors) that rolls members up into one entry."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from ninja import Router

from memory import inputs, services
from memory.engine.errors import NotFound
from memory.engine.longterm import reader as longterm
from memory.engine.longterm.reader import FaceItem
from memory.engine.shards import generation_of
from memory.selectors import faces as faces_reads
from memory.web.api import access
from memory.web.api.errors import READ_ERRORS, WRITE_ERRORS
from memory.web.auth import user_of
from memory.web.saves import SaveName
from memory.web.schemas import (
    AbstractIn,
    AbstractOut,
    ErrorOut,
    FacesOut,
    LongTermEntryOut,
    SearchOut,
    SlugOut,
)

router = Router()


def _face_out(
    item: FaceItem, shadowed: dict, superseded: dict, undeliverable: dict
) -> dict[str, Any]:
    state = (
        "shadowed" if item.id in shadowed else "superseded" if item.id in superseded else "default"
    )
    return {
        **faces_reads.face_item_dict(item),
        "state": state,
        "shadowed_by": shadowed.get(item.id),
        "superseded_by": superseded.get(item.id),
        "undeliverable": undeliverable.get(item.id),
    }


@router.get(
    "/viewers/{oid:viewer_id}/faces", response={200: FacesOut, **READ_ERRORS}, url_name="faces"
)
def faces(request: HttpRequest, save: SaveName, viewer_id: str, include_shadowed: bool = False):
    """The viewer's long-term listing: the default face, or with shadowed and superseded
    entries brought back (tagged) when `include_shadowed`."""
    viewer = access.viewer(request, viewer_id)
    view = faces_reads.faces_view(viewer, include_shadowed=include_shadowed)
    answer = view.answer
    maps = (answer.shadowed, answer.superseded, answer.undeliverable)
    return {
        "viewer_id": viewer.id,
        "include_shadowed": include_shadowed,
        "items": [_face_out(item, *maps) for item in answer.items],
        "shadowed": maps[0],
        "superseded": maps[1],
        "withheld": list(answer.withheld),
        "undeliverable": maps[2],
        "rows_visited": answer.rows_visited,
        "name_warnings": [w.as_dict() for w in answer.name_warnings],
    }


@router.get(
    "/viewers/{oid:viewer_id}/long-term/{oid:entry_id}",
    response={200: LongTermEntryOut, **READ_ERRORS},
    url_name="long_term_entry",
)
def long_term_entry(request: HttpRequest, save: SaveName, viewer_id: str, entry_id: str):
    """One long-term entry by id: always delivered, with notes naming what shadows or
    supersedes it, and its provenance (its rollup, or the members it absorbed)."""
    viewer = access.viewer(request, viewer_id)
    found = faces_reads.long_term_entry(viewer.id, inputs.path_id(entry_id, "entry_id"))
    return {
        "viewer_id": viewer.id,
        "item": _face_out(found.item, *faces_reads.face_maps(viewer.id)),
        "notes": found.notes,
        "rollup": found.rollup,
        "members": found.members,
        "shadows": [{"id": r["id"], "title": r["title"]} for r in found.shadows],
        "abstracted_into": found.abstracted_into,
    }


@router.get(
    "/viewers/{oid:viewer_id}/search", response={200: SearchOut, **READ_ERRORS}, url_name="search"
)
def search(
    request: HttpRequest, save: SaveName, viewer_id: str, q: str, include_shadowed: bool = False
):
    """Search the viewer's long-term memory (default face unless `include_shadowed`)."""
    viewer = access.viewer(request, viewer_id)
    items = longterm.search_long_term(
        viewer.id, inputs.text(q, "q"), include_shadowed=include_shadowed
    )
    maps = faces_reads.face_maps(viewer.id)
    return {
        "viewer_id": viewer.id,
        "q": q,
        "include_shadowed": include_shadowed,
        "items": [_face_out(item, *maps) for item in items],
    }


@router.get(
    "/viewers/{oid:viewer_id}/resolve",
    response={200: SlugOut, **READ_ERRORS},
    url_name="slug",
)
def resolve_slug(
    request: HttpRequest, save: SaveName, viewer_id: str, slug: str, include_shadowed: bool = False
):
    """Resolve a bare slug the way the viewer's prompt would (shadowed entries lose)."""
    viewer = access.viewer(request, viewer_id)
    item = longterm.resolve_slug(
        viewer.id, inputs.path_id(slug, "slug"), include_shadowed=include_shadowed
    )
    if item is None:
        raise NotFound(f"{viewer.id} resolves no entry for slug {slug!r}", field="slug")
    return {
        "viewer_id": viewer.id,
        "slug": slug,
        "item": _face_out(item, *faces_reads.face_maps(viewer.id)),
    }


@router.post(
    "/viewers/{oid:viewer_id}/abstract",
    response={201: AbstractOut, 409: ErrorOut, **WRITE_ERRORS},
    url_name="abstract",
)
def abstract(request: HttpRequest, save: SaveName, viewer_id: str, payload: AbstractIn):
    """Roll members up into one long-term entry, pinned to `expected_generation`: a stale
    generation or an already-absorbed member is a 409 and nothing lands."""
    access.require_editor(request)
    viewer = access.viewer(request, viewer_id)
    inputs.payload(payload)
    rollup = services.abstract_memories(
        viewer.id,
        payload.member_ids,
        name=payload.name,
        body=payload.body,
        slug=payload.slug,
        expected_generation=payload.expected_generation,
        user=user_of(request),
    )
    return 201, {
        "id": rollup.id,
        "owner_id": viewer.id,
        "scope": rollup.scope_id,
        "slug": rollup.slug,
        "name": rollup.name,
        "generation": generation_of(viewer.id),
        "member_ids": payload.member_ids,
    }
