"""Events: one moment, every witness's line side by side (the event page's twin)."""

from __future__ import annotations

from django.http import HttpRequest
from ninja import Router

from memory import inputs
from memory.selectors import events as event_reads
from memory.web.api import access
from memory.web.api.errors import READ_ERRORS
from memory.web.saves import SaveName
from memory.web.schemas import EventOut

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
