"""A viewer's prompt context with its leak findings, and every finding of every viewer."""

from __future__ import annotations

from django.http import HttpRequest
from ninja import Router

from memory.web import inputs
from memory.web.api import access
from memory.web.api.errors import READ_ERRORS
from memory.web.schemas import LeaksOut, PromptOut
from memory.web.selectors import leaks as leak_reads

router = Router()


@router.get(
    "/viewers/{viewer_id}/prompt", response={200: PromptOut, **READ_ERRORS}, url_name="prompt"
)
def prompt(request: HttpRequest, viewer_id: str):
    """The viewer's prompt context and the leak findings in it (offsets into `text`)."""
    viewer = access.viewer(request, viewer_id)
    view = leak_reads.prompt_view(viewer)
    return {
        "viewer_id": viewer.id,
        "text": view.text,
        "sections": [{"name": s.name, "text": s.text} for s in view.sections],
        "findings": view.findings,
    }


@router.get("/leaks", response={200: LeaksOut, **READ_ERRORS}, url_name="leaks")
def leaks(
    request: HttpRequest,
    viewer: str | None = None,
    kind: str | None = None,
    world: str | None = None,
    state: str | None = None,
    sort: str | None = None,
):
    """Every distinct leak in every viewer's prompt context (one per section, with its count,
    occurrences, source rows and acceptance state), filtered by viewer, kind, world and state."""
    access.require_reader(request)
    if viewer:
        viewer = access.viewer(request, viewer).id
    items = leak_reads.leak_findings(
        viewer_id=viewer or None,
        kind=inputs.text(kind, "kind") or None,
        world_id=inputs.text(world, "world") or None,
        state=inputs.text(state, "state") or None,
        sort=inputs.text(sort, "sort") or None,
    )
    return {"items": items, "count": len(items)}
