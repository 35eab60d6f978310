"""Events: one moment, every witness's line side by side (the event page's twin), and the
search across a save, whose answers are events."""

from __future__ import annotations

from django.http import HttpRequest
from ninja import Router

from memory import inputs
from memory.engine.cursor import BadCursor
from memory.selectors import events as event_reads
from memory.web.api import access
from memory.web.api.errors import READ_ERRORS, ApiError
from memory.web.saves import SaveName
from memory.web.schemas import ErrorOut, EventOut, EventSearchOut

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
