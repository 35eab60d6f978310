"""A viewer's prompt context with its leak findings, and every finding of every viewer."""

from __future__ import annotations

from django.http import HttpRequest
from ninja import Router

from memory import inputs, services
from memory.engine.clock import world_time_at
from memory.engine.errors import InvalidInput
from memory.selectors import leaks as leak_reads
from memory.selectors import prompt_view as prompt_reads
from memory.web.api import access
from memory.web.api.errors import READ_ERRORS, WRITE_ERRORS, ApiError, ErrorOut
from memory.web.auth import user_of
from memory.web.saves import SaveName
from memory.web.schemas import (
    LeakAcceptanceOut,
    LeakAcceptIn,
    LeakKeyIn,
    LeaksOut,
    PromptOut,
)

router = Router()


@router.get(
    "/viewers/{oid:viewer_id}/prompt",
    response={200: PromptOut, 400: ErrorOut, **READ_ERRORS},
    url_name="prompt",
)
def prompt(request: HttpRequest, save: SaveName, viewer_id: str, at: str | None = None):
    """The viewer's prompt context and the leak findings in it (offsets into `text`), each
    with the first moment it is in the prompt. `at` (an ISO time with a zone, on the world's
    clock): the context as it stood at that moment, its leaks scanned then."""
    viewer = access.viewer(request, viewer_id)
    moment = None
    if at:
        try:
            moment = world_time_at(inputs.text(at, "at"))
        except InvalidInput as exc:
            raise ApiError(400, str(exc), "invalid", "at") from None
    view = prompt_reads.prompt_view(viewer, moment)
    return {
        "viewer_id": viewer.id,
        "at": view.at,
        "aliases": view.aliases_note,
        "text": view.text,
        "sections": [{"name": s.name, "text": s.text} for s in view.sections],
        "findings": view.findings,
        "flaws": [{k: f[k] for k in _FLAW_FIELDS} for f in view.flaws],
    }


# A flaw as the page has it, less the cut pieces (`before`, `after`) only the page uses.
_FLAW_FIELDS = (
    "kind",
    "start",
    "end",
    "text",
    "corrected",
    "section",
    "source_id",
    "line",
    "line_offset",
)


@router.get("/leaks", response={200: LeaksOut, **READ_ERRORS}, url_name="leaks")
def leaks(
    request: HttpRequest,
    save: SaveName,
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


@router.post(
    "/leaks/accept",
    response={200: LeakAcceptanceOut, 409: ErrorOut, **WRITE_ERRORS},
    url_name="leak_accept",
)
def accept(request: HttpRequest, save: SaveName, payload: LeakAcceptIn):
    """Accept one current finding as expected (editors; a reason is required). It stays
    accepted across rescans while its viewer, section, kind and text are unchanged, and
    `scan_leaks --fail-on-leak` ignores it."""
    access.require_editor(request)
    viewer = access.viewer(request, payload.viewer_id)
    inputs.payload(payload)
    done = services.accept_leak(
        viewer.id,
        payload.section,
        payload.kind,
        payload.text,
        payload.reason,
        user=user_of(request),
    )
    return {
        "viewer_id": done.viewer_id,
        "section": done.section,
        "kind": done.kind,
        "text": done.text,
        "reason": done.reason,
        "accepted_by": done.accepted_by.get_username() if done.accepted_by else None,
        "accepted_at": done.accepted_at.isoformat(),
    }


@router.post("/leaks/reopen", response={204: None, **WRITE_ERRORS}, url_name="leak_reopen")
def reopen(request: HttpRequest, save: SaveName, payload: LeakKeyIn):
    """Withdraw an acceptance: the finding counts as a leak again (editors)."""
    access.require_editor(request)
    viewer = access.viewer(request, payload.viewer_id)
    inputs.payload(payload)
    services.reopen_leak(
        viewer.id, payload.section, payload.kind, payload.text, user=user_of(request)
    )
    return 204, None
