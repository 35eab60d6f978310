"""Events: one moment, every witness's line side by side (the event page's twin), and the
search across a save, whose answers are events."""

from __future__ import annotations

from django.http import HttpRequest
from ninja import Router

from memory import inputs
from memory.engine.cursor import BadCursor
from memory.selectors import events as event_reads
from memory.selectors import pair as pair_reads
from memory.web.api import access
from memory.web.api.errors import READ_ERRORS, ApiError
from memory.web.saves import SaveName
from memory.web.schemas import ErrorOut, EventOut, EventSearchOut, PairOut

router = Router()


@router.get("/events/{oid:event}", response={200: EventOut, **READ_ERRORS}, url_name="event")
def event(request: HttpRequest, save: SaveName, event: str):
    """The witness rows of one moment (same world, timestamp and parsed intent): each line as
    its witness reads it, the label each uses for each participant, the leaks in each line."""
    access.require_reader(request)
    view = event_reads.event_view(inputs.path_id(event, "event"))
    return {
        "event": view.id,
        "timestamp": view.timestamp,
        "world_id": view.world_id,
        "kind": view.kind,
        "actor_id": view.actor.id if view.actor else None,
        "places": view.places,
        "participants": [
            {"id": r.person.id, "name": r.person.name, "called_differently": r.differs}
            for r in view.participants
        ],
        "witnesses": [
            {
                "viewer_id": w.viewer.id,
                "viewer_name": w.name,
                "entry_id": w.entry.id,
                "line": w.entry.line,
                "undeliverable": w.entry.undeliverable,
                "retracted": w.entry.retracted,
                "location_id": w.entry.location_id,
                "outcome": w.outcome,
                "labels": {pid: label.text for pid, label in w.labels.items()},
                "label_kinds": {pid: label.kind for pid, label in w.labels.items()},
                "leaks": [f.to_dict() for f in w.leaks],
            }
            for w in view.witnesses
        ],
    }


@router.get(
    "/search", response={200: EventSearchOut, 400: ErrorOut, **READ_ERRORS}, url_name="search"
)
def search(
    request: HttpRequest, save: SaveName, q: str = "", before: str | None = None, limit: int = 20
):
    """The save's events one of whose witnesses reads a line holding every word of `q` (each
    word beginning a word of the line, as the buffer's `q`), newest first, each with every
    witness's line; `before` takes `older` from the page before."""
    access.require_reader(request)
    inputs.text(q, "q")
    inputs.text(before, "before")
    inputs.limit(limit)
    try:
        results = event_reads.search(q, before=before or None, limit=min(limit, 100))
    except BadCursor as exc:
        raise ApiError(400, str(exc), "bad_cursor", "before") from None
    page = results.page
    return {
        "q": q,
        "items": [
            {
                "event": e.event,
                "timestamp": e.timestamp,
                "witnesses": [
                    {
                        "viewer_id": w.viewer_id,
                        "viewer_name": results.names[w.viewer_id],
                        "entry_id": w.entry_id,
                        "line": w.line,
                        "undeliverable": w.undeliverable,
                        "matched": w.matched,
                    }
                    for w in e.witnesses
                ],
            }
            for e in page.events
        ],
        "older": page.older,
        "searched_to": page.searched_to,
        "rows_visited": page.rows_visited,
    }


@router.get(
    "/viewers/{oid:viewer_id}/remembers/{oid:target_id}",
    response={200: PairOut, 400: ErrorOut, **READ_ERRORS},
    url_name="pair",
)
def pair(
    request: HttpRequest,
    save: SaveName,
    viewer_id: str,
    target_id: str,
    after: str | None = None,
    before: str | None = None,
    limit: int = 50,
):
    """What the viewer remembers of the target: every moment of the viewer's buffer with the
    target as actor or target, oldest first, each line as the viewer read it then and the
    label it used; `labels` is how that label changed in play (a followed game's changes; an
    imported save holds only its last aliases, and `history` says so)."""
    viewer = access.viewer(request, viewer_id)
    inputs.limit(limit)
    inputs.text(after, "after")
    inputs.text(before, "before")
    try:
        view = pair_reads.pair_view(
            viewer,
            inputs.path_id(target_id, "target_id"),
            after=after or None,
            before=before or None,
            limit=min(limit, 200),
        )
    except BadCursor as exc:
        raise ApiError(400, str(exc), "bad_cursor", "after" if after else "before") from None
    return {
        "viewer_id": viewer.id,
        "viewer_name": view.viewer_name,
        "target_id": view.target_id,
        "target_name": view.target_name,
        "labels": [{"label": s.label, "until": s.until} for s in view.steps],
        "history": view.history,
        "items": [
            {
                "event": i.event,
                "witness_count": i.witness_count,
                "entry_id": i.entry.id,
                "timestamp": i.entry.timestamp,
                "line": i.entry.line,
                "undeliverable": i.entry.undeliverable,
                "label": i.label,
            }
            for i in view.items
        ],
        "newer": view.newer,
        "older": view.older,
    }
