"""Entities (possible viewers), a viewer's aliases, and the alias writes (editors)."""

from __future__ import annotations

from django.http import HttpRequest
from ninja import Router

from memory import inputs, services
from memory.selectors import aliases as alias_reads
from memory.selectors import viewers as viewer_reads
from memory.web.api import access
from memory.web.api.errors import READ_ERRORS, WRITE_ERRORS
from memory.web.auth import user_of
from memory.web.saves import SaveName
from memory.web.schemas import (
    AliasChangeOut,
    AliasIn,
    AliasListOut,
    AliasOut,
    EntityListOut,
    EntityOut,
)

router = Router()


@router.get("/entities", response={200: EntityListOut, **READ_ERRORS}, url_name="entities")
def list_entities(
    request: HttpRequest,
    save: SaveName,
    q: str | None = None,
    world_id: str | None = None,
    limit: int = 100,
    offset: int = 0,
):
    """Entities (possible viewers) in (world, id) order, optionally searched by id or
    attribute value, with the name pages show it by (its true name, else its id): `limit`
    of them from `offset`; `total` counts every match."""
    access.require_reader(request)
    entities, total = viewer_reads.entity_list(
        world_id=inputs.text(world_id, "world_id"),
        q=inputs.text(q, "q"),
        limit=inputs.limit(limit),
        offset=inputs.offset(offset),
    )
    items = [
        EntityOut(
            id=e.id,
            name=e.name,
            world_id=e.world_id,
            location_id=e.location_id,
            is_agent=e.is_agent,
        )
        for e in entities
    ]
    return {"items": items, "count": len(items), "total": total}


@router.get(
    "/viewers/{oid:viewer_id}/aliases",
    response={200: AliasListOut, **READ_ERRORS},
    url_name="aliases",
)
def list_aliases(
    request: HttpRequest, save: SaveName, viewer_id: str, limit: int = 100, offset: int = 0
):
    """The viewer's alias for every other entity of its world, with state and a suggestion:
    `limit` rows from `offset` (the world's entities by id, then labels for ids outside it);
    `total` counts them all."""
    viewer = access.viewer(request, viewer_id)
    page = alias_reads.alias_page(viewer, offset=inputs.offset(offset), limit=inputs.limit(limit))
    items = [
        AliasOut(
            target_id=r.target_id,
            label=r.label,
            state=r.state,
            shown_as=r.shown_as,
            true_name=r.true_name,
            suggestion=r.suggestion,
            in_world=r.in_world,
        )
        for r in page.rows
    ]
    return {
        "viewer_id": viewer.id,
        "items": items,
        "total": page.total,
        "aliases_error": viewer.aliases_error,
    }


@router.put(
    "/viewers/{oid:viewer_id}/aliases/{oid:target_id}",
    response={200: AliasChangeOut, **WRITE_ERRORS},
    url_name="alias_set",
)
def set_alias(
    request: HttpRequest, save: SaveName, viewer_id: str, target_id: str, payload: AliasIn
):
    """Set what the viewer calls the target. Refused: unknown target, self, system/generated ids."""
    access.require_editor(request)
    viewer = access.viewer(request, viewer_id)
    inputs.payload(payload)
    result = services.set_alias(
        viewer.id,
        inputs.path_id(target_id, "target_id"),
        payload.label,
        user=user_of(request),
        source="api",
    )
    return AliasChangeOut(**vars(result))


@router.delete(
    "/viewers/{oid:viewer_id}/aliases/{oid:target_id}",
    response={200: AliasChangeOut, **WRITE_ERRORS},
    url_name="alias_delete",
)
def delete_alias(request: HttpRequest, save: SaveName, viewer_id: str, target_id: str):
    """Forget the viewer's alias for the target (it reads as "an unfamiliar figure" again)."""
    access.require_editor(request)
    viewer = access.viewer(request, viewer_id)
    result = services.delete_alias(
        viewer.id, inputs.path_id(target_id, "target_id"), user=user_of(request), source="api"
    )
    return AliasChangeOut(**vars(result))
