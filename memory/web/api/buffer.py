"""The subjective buffer: a page of it, one entry, and the write door (remember, retract)."""

from __future__ import annotations

import json
from typing import Any, Literal

from django.http import HttpRequest
from ninja import Query, Router

from memory import inputs, services
from memory.engine.buffer.rendered import RenderedEntry
from memory.engine.cursor import BadCursor
from memory.selectors import buffer as buffer_reads
from memory.selectors import entries as entry_reads
from memory.selectors import events as event_reads
from memory.web.api import access
from memory.web.api.errors import READ_ERRORS, WRITE_ERRORS, ApiError
from memory.web.auth import user_of
from memory.web.saves import SaveName
from memory.web.schemas import (
    BufferEntryOut,
    BufferPageOut,
    EntryOut,
    ErrorOut,
    MemoryIn,
    MemoryOut,
)

router = Router()

BufferType = Literal["dialogue", "action", "monologue", "thought"]


def _entry_out(e: RenderedEntry, ref: event_reads.EventRef | None = None) -> dict[str, Any]:
    return {
        "event": ref.event if ref else None,
        "witness_count": ref.witness_count if ref else None,
        "id": e.id,
        "timestamp": e.timestamp,
        "line": e.line,
        "line_corrected": e.line_corrected,
        "flaws": [flaw.to_dict() for flaw in e.flaws],
        "undeliverable": e.undeliverable,
        "type": e.type,
        "actor_id": e.actor_id,
        "target_ids": list(e.target_ids),
        "location_id": e.location_id,
        "conversation_id": e.conversation_id,
        "retracted": e.retracted,
        "abstracted_into": e.abstracted_into,
    }


def _json_or_text(raw: str | None) -> Any:
    if raw is None:
        return None
    try:
        return json.loads(raw)
    except ValueError:
        return raw


@router.get(
    "/viewers/{oid:viewer_id}/buffer",
    response={200: BufferPageOut, 400: ErrorOut, **READ_ERRORS},
    url_name="buffer",
)
def buffer(
    request: HttpRequest,
    save: SaveName,
    viewer_id: str,
    before: str | None = None,
    after: str | None = None,
    cursor: str | None = None,
    type: list[BufferType] = Query(None),  # noqa: B008 - the page's own parameter name
    q: str | None = None,
    uses: str | None = None,
    limit: int = 50,
):
    """One page of the viewer's subjective buffer, chronological; newest page by default.

    `cursor` is a synonym of `before` (the `older` cursor of a page); `after` takes `newer`;
    `q` is a word search (each word of it, letters and digits in any case, begins a word of
    the line); `uses` keeps the lines naming that entity (where the viewer's alias for it
    shows).
    """
    viewer = access.viewer(request, viewer_id)
    inputs.limit(limit)
    inputs.text(q, "q")
    inputs.text(uses, "uses")
    before = before or cursor
    try:
        page = buffer_reads.buffer_page(
            viewer,
            before=before or None,
            after=after or None,
            limit=limit,
            types=frozenset(type or ()) or None,
            q=q,
            uses=uses or None,
        )
    except BadCursor as exc:
        raise ApiError(400, str(exc), "bad_cursor", "after" if after else "before") from None
    # One statement for the page's witness counts, whatever its length.
    refs = event_reads.buffer_events(viewer, page.entries)
    return {
        "viewer_id": viewer.id,
        "items": [BufferEntryOut(**_entry_out(e, refs[e.id])) for e in page.entries],
        "older": page.older,
        "newer": page.newer,
        "rows_visited": page.rows_visited,
        "searched_to": page.searched_to,
    }


@router.get(
    "/viewers/{oid:viewer_id}/entries/{oid:entry_id}",
    response={200: EntryOut, **READ_ERRORS},
    url_name="entry",
)
def entry(request: HttpRequest, save: SaveName, viewer_id: str, entry_id: str):
    """One memory as its owner reads it, with the raw intent and outcome."""
    viewer = access.viewer(request, viewer_id)
    e = entry_reads.get_entry(viewer, inputs.path_id(entry_id, "entry_id"))
    ref = event_reads.buffer_events(viewer, [e])[e.id]
    return EntryOut(
        **_entry_out(e, ref),
        intent=_json_or_text(e.intent_json),
        outcome=_json_or_text(e.outcome_json),
    )


@router.post(
    "/viewers/{oid:viewer_id}/memories",
    response={201: MemoryOut, **WRITE_ERRORS},
    url_name="remember",
)
def remember(request: HttpRequest, save: SaveName, viewer_id: str, payload: MemoryIn):
    """Write one memory for the viewer through the engine's write door."""
    access.require_editor(request)
    inputs.payload(payload)
    # The write door looks the owner up itself (with its world's clock): asking here first
    # would be one more round trip on the hottest path.
    done = services.remember_memory(
        inputs.path_id(viewer_id, "viewer_id"),
        user=user_of(request),
        intent=payload.intent,
        outcome=payload.outcome,
        timestamp=payload.timestamp,
        location_id=payload.location_id,
        conversation_id=payload.conversation_id,
    )
    e = done.entry
    return 201, MemoryOut(
        id=e.id,
        owner_id=e.owner_id,
        timestamp=e.timestamp,
        generation=done.generation,
        retracted=False,
    )


@router.post(
    "/memories/{oid:entry_id}/retract",
    response={200: MemoryOut, **WRITE_ERRORS},
    url_name="retract",
)
def retract(request: HttpRequest, save: SaveName, entry_id: str):
    """Mark a memory retracted; the row stays (it still happened)."""
    access.require_editor(request)
    e, changed = services.retract_memory(
        inputs.path_id(entry_id, "entry_id"), user=user_of(request)
    )
    return MemoryOut(
        id=e.id, owner_id=e.owner_id, timestamp=e.timestamp, retracted=True, changed=changed
    )
