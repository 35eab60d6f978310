"""Projections: a viewer's sessions, digest and episodes, and the doors that fold them
(cycle and verify for editors, rebuild for admins)."""

from __future__ import annotations

from django.http import HttpRequest
from ninja import Router

from memory import inputs, services
from memory.engine.projections import doors
from memory.web.api import access
from memory.web.api.errors import READ_ERRORS, WRITE_ERRORS
from memory.web.auth import user_of
from memory.web.saves import SaveName
from memory.web.schemas import (
    CycleOut,
    DigestOut,
    EpisodePageOut,
    RebuildOut,
    SessionPageOut,
    VerifyOut,
)

router = Router()


@router.get(
    "/viewers/{oid:viewer_id}/sessions",
    response={200: SessionPageOut, **READ_ERRORS},
    url_name="sessions",
)
def sessions(
    request: HttpRequest, save: SaveName, viewer_id: str, limit: int = 50, before: str | None = None
):
    """The viewer's session projections, newest first; live counts are computed at read time."""
    viewer = access.viewer(request, viewer_id)
    page = doors.sessions(
        viewer.id, limit=inputs.limit(limit), before=inputs.text(before, "before") or None
    )
    return {
        "viewer_id": viewer.id,
        "items": [vars(item) for item in page.items],
        "next_cursor": page.next_cursor,
        "rows_visited": page.rows_visited,
    }


@router.get(
    "/viewers/{oid:viewer_id}/digest", response={200: DigestOut, **READ_ERRORS}, url_name="digest"
)
def digest(request: HttpRequest, save: SaveName, viewer_id: str, known_hash: str | None = None):
    """Viewer-relative lines naming its sessions, and their hash; pass `known_hash` to be told
    `unchanged` (and handed no lines) when nothing moved."""
    viewer = access.viewer(request, viewer_id)
    answer = doors.digest(viewer.id, known_hash=inputs.text(known_hash, "known_hash"))
    return {
        "viewer_id": viewer.id,
        "lines": answer.lines,
        "hash": answer.hash,
        "unchanged": answer.unchanged,
        "rows_visited": answer.rows_visited,
    }


@router.get(
    "/viewers/{oid:viewer_id}/episodes",
    response={200: EpisodePageOut, **READ_ERRORS},
    url_name="episodes",
)
def episodes(
    request: HttpRequest, save: SaveName, viewer_id: str, limit: int = 50, before: str | None = None
):
    """The viewer's episodes, newest first; the open one (if any) leads."""
    viewer = access.viewer(request, viewer_id)
    page = doors.episodes(
        viewer.id, limit=inputs.limit(limit), before=inputs.text(before, "before") or None
    )
    return {
        "viewer_id": viewer.id,
        "items": [vars(item) for item in page.items],
        "next_cursor": page.next_cursor,
        "rows_visited": page.rows_visited,
    }


@router.post("/projections/cycle", response={200: CycleOut, **WRITE_ERRORS}, url_name="run_cycle")
def run_cycle(request: HttpRequest, save: SaveName):
    """Fold every row written since each shard's watermark (the incremental cycle)."""
    access.require_editor(request)
    return services.run_cycle(user=user_of(request))


@router.post("/projections/rebuild", response={200: RebuildOut, **WRITE_ERRORS}, url_name="rebuild")
def rebuild(request: HttpRequest, save: SaveName):
    """Re-fold every session and episode from the buffer (admins only; never on a timer)."""
    access.require_admin(request)
    return services.rebuild_projections(user=user_of(request))


@router.post("/projections/verify", response={200: VerifyOut, **WRITE_ERRORS}, url_name="verify")
def verify(request: HttpRequest, save: SaveName):
    """Fold everything afresh in memory and compare with the stored rows; writes nothing."""
    access.require_editor(request)
    return services.verify_projections()
