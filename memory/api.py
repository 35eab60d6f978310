"""The JSON twin of every inspector panel, and the write doors (staff only).

Reads need a login session or an API token; writes need staff. Every 4xx has one shape,
`{"detail": str, "code": str, "field": str | null}` (schemas.ErrorOut).
"""

from __future__ import annotations

import json
from typing import Any, Literal

from django.http import Http404, HttpRequest, HttpResponse
from ninja import Query, Router
from ninja.errors import AuthenticationError, HttpError, ValidationError

from memory import selectors, services
from memory.auth import API_AUTH, is_staff, user_of
from memory.intents import IntentError
from memory.schemas import (
    AliasChangeOut,
    AliasIn,
    AliasListOut,
    AliasOut,
    BufferEntryOut,
    BufferPageOut,
    EntityListOut,
    EntityOut,
    EntryOut,
    ErrorOut,
    MemoryIn,
    MemoryOut,
)
from memory.selectors import BadCursor, NotFound, RenderedEntry

router = Router(auth=API_AUTH, tags=["memory"])

READ_ERRORS = {401: ErrorOut, 404: ErrorOut, 422: ErrorOut}
WRITE_ERRORS = {400: ErrorOut, 401: ErrorOut, 403: ErrorOut, 404: ErrorOut, 422: ErrorOut}
BufferType = Literal["dialogue", "action", "monologue", "thought"]


class ApiError(Exception):
    def __init__(self, status: int, detail: str, code: str, field: str | None = None) -> None:
        super().__init__(detail)
        self.status, self.detail, self.code, self.field = status, detail, code, field


# --- the one error shape -----------------------------------------------------------------------

_CODES = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    422: "invalid",
}


def _error(
    api, request: HttpRequest, status: int, detail: str, code: str, field: str | None
) -> HttpResponse:
    return api.create_response(
        request, {"detail": detail, "code": code, "field": field}, status=status
    )


def install_error_handlers(api) -> None:
    """Register the handlers that give every API error the ErrorOut shape (idempotent)."""

    def on_api_error(request, exc: ApiError):
        return _error(api, request, exc.status, exc.detail, exc.code, exc.field)

    def on_validation(request, exc: ValidationError):
        first: dict[str, Any] = exc.errors[0] if exc.errors else {}
        loc = [
            str(p) for p in first.get("loc", ()) if p not in ("body", "query", "path", "payload")
        ]
        field = ".".join(loc) or None
        return _error(
            api,
            request,
            422,
            f"{field or 'input'}: {first.get('msg', 'invalid')}",
            "invalid",
            field,
        )

    def on_http_error(request, exc: HttpError):
        status = exc.status_code
        code = (
            "unauthorized" if isinstance(exc, AuthenticationError) else _CODES.get(status, "error")
        )
        detail = "log in or send Authorization: Bearer <token>" if status == 401 else str(exc)
        return _error(api, request, status, detail, code, None)

    def on_404(request, exc: Http404):
        return _error(api, request, 404, str(exc) or "not found", "not_found", None)

    api.add_exception_handler(ApiError, on_api_error)
    api.add_exception_handler(ValidationError, on_validation)
    api.add_exception_handler(HttpError, on_http_error)
    api.add_exception_handler(Http404, on_404)


def _id(value: str, what: str) -> str:
    # PostgreSQL refuses NUL in text; such an id can name nothing, so it is a 404, not a 500.
    if "\x00" in value:
        raise ApiError(404, f"no {what} with that id", "not_found", what)
    return value


def _viewer(viewer_id: str) -> selectors.Viewer:
    try:
        return selectors.get_viewer(_id(viewer_id, "viewer_id"))
    except NotFound as exc:
        raise ApiError(404, str(exc), "not_found", "viewer_id") from None


def _require_staff(request: HttpRequest) -> None:
    if not is_staff(request):
        raise ApiError(403, "writes need a staff account", "forbidden")


def _entry_out(e: RenderedEntry) -> dict[str, Any]:
    return {
        "id": e.id,
        "timestamp": e.timestamp,
        "line": e.line,
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


# --- reads ------------------------------------------------------------------------------------


@router.get("/entities", response={200: EntityListOut, **READ_ERRORS}, url_name="entities")
def list_entities(request: HttpRequest, q: str | None = None, world_id: str | None = None):
    """Every entity (a possible viewer), optionally searched by id or attribute value."""
    if (q and "\x00" in q) or (world_id and "\x00" in world_id):
        raise ApiError(
            422,
            "NUL characters are not allowed",
            "invalid",
            "q" if q and "\x00" in q else "world_id",
        )
    items = [
        EntityOut(
            id=o.id,
            world_id=o.world_id,
            location_id=o.location_id,
            is_agent=None if o.is_agent is None else bool(o.is_agent),
        )
        for o in selectors.list_viewers(world_id=world_id, q=q)
    ]
    return {"items": items, "count": len(items)}


@router.get(
    "/viewers/{viewer_id}/aliases", response={200: AliasListOut, **READ_ERRORS}, url_name="aliases"
)
def list_aliases(request: HttpRequest, viewer_id: str):
    """The viewer's alias for every other entity of its world, with state and a suggestion."""
    viewer = _viewer(viewer_id)
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
        for r in selectors.alias_rows(viewer)
    ]
    return {"viewer_id": viewer.id, "items": items, "aliases_error": viewer.aliases_error}


@router.get(
    "/viewers/{viewer_id}/buffer",
    response={200: BufferPageOut, 400: ErrorOut, **READ_ERRORS},
    url_name="buffer",
)
def buffer(
    request: HttpRequest,
    viewer_id: str,
    before: str | None = None,
    after: str | None = None,
    cursor: str | None = None,
    type: list[BufferType] = Query(None),  # noqa: A002, B008 - the page's own parameter name
    q: str | None = None,
    limit: int = 50,
):
    """One page of the viewer's subjective buffer, chronological; newest page by default.

    `cursor` is a synonym of `before` (the `older` cursor of a page); `after` takes `newer`.
    """
    viewer = _viewer(viewer_id)
    if not 1 <= limit <= 500:
        raise ApiError(422, "limit must be between 1 and 500", "invalid", "limit")
    if q and "\x00" in q:
        raise ApiError(422, "q must not contain NUL characters", "invalid", "q")
    before = before or cursor
    try:
        page = selectors.buffer_page(
            viewer,
            before=before or None,
            after=after or None,
            limit=limit,
            types=frozenset(type or ()) or None,
            q=q,
        )
    except BadCursor as exc:
        raise ApiError(400, str(exc), "bad_cursor", "after" if after else "before") from None
    return {
        "viewer_id": viewer.id,
        "items": [BufferEntryOut(**_entry_out(e)) for e in page.entries],
        "older": page.older,
        "newer": page.newer,
        "rows_visited": page.rows_visited,
    }


@router.get(
    "/viewers/{viewer_id}/entries/{entry_id}",
    response={200: EntryOut, **READ_ERRORS},
    url_name="entry",
)
def entry(request: HttpRequest, viewer_id: str, entry_id: str):
    """One memory as its owner reads it, with the raw intent and outcome."""
    viewer = _viewer(viewer_id)
    try:
        e = selectors.get_entry(viewer, _id(entry_id, "entry_id"))
    except NotFound as exc:
        raise ApiError(404, str(exc), "not_found", "entry_id") from None
    return EntryOut(
        **_entry_out(e), intent=_json_or_text(e.intent_json), outcome=_json_or_text(e.outcome_json)
    )


# --- writes (staff) ---------------------------------------------------------------------------


@router.put(
    "/viewers/{viewer_id}/aliases/{target_id}",
    response={200: AliasChangeOut, **WRITE_ERRORS},
    url_name="alias_set",
)
def set_alias(request: HttpRequest, viewer_id: str, target_id: str, payload: AliasIn):
    """Set what the viewer calls the target. Refused: unknown target, self, system/generated ids."""
    _require_staff(request)
    viewer = _viewer(viewer_id)
    if "\x00" in payload.label:
        raise ApiError(422, "label contains control characters", "invalid", "label")
    try:
        result = services.set_alias(
            viewer.id,
            _id(target_id, "target_id"),
            payload.label,
            user=user_of(request),
            source="api",
        )
    except services.AliasRefused as exc:
        field = (
            "target_id"
            if any(e.startswith(("target", "an entity's alias")) for e in exc.errors)
            else exc.field
        )
        raise ApiError(422, "; ".join(exc.errors), "invalid", field) from None
    return AliasChangeOut(**vars(result))


@router.delete(
    "/viewers/{viewer_id}/aliases/{target_id}",
    response={200: AliasChangeOut, **WRITE_ERRORS},
    url_name="alias_delete",
)
def delete_alias(request: HttpRequest, viewer_id: str, target_id: str):
    """Forget the viewer's alias for the target (it reads as "an unfamiliar figure" again)."""
    _require_staff(request)
    viewer = _viewer(viewer_id)
    try:
        result = services.delete_alias(
            viewer.id, _id(target_id, "target_id"), user=user_of(request), source="api"
        )
    except services.AliasRefused as exc:
        raise ApiError(422, "; ".join(exc.errors), "invalid", exc.field) from None
    return AliasChangeOut(**vars(result))


@router.post(
    "/viewers/{viewer_id}/memories", response={201: MemoryOut, **WRITE_ERRORS}, url_name="remember"
)
def remember(request: HttpRequest, viewer_id: str, payload: MemoryIn):
    """Write one memory for the viewer through the engine's write door."""
    from memory.rows import MemoryWriteError

    _require_staff(request)
    viewer = _viewer(viewer_id)
    try:
        done = services.remember_memory(
            viewer.id,
            user=user_of(request),
            intent=payload.intent,
            outcome=payload.outcome,
            timestamp=payload.timestamp,
            location_id=payload.location_id,
            conversation_id=payload.conversation_id,
        )
    except IntentError as exc:
        field = "outcome" if str(exc).lower().startswith("outcome") else "intent"
        raise ApiError(422, str(exc), "invalid", field) from None
    except MemoryWriteError as exc:
        raise ApiError(422, str(exc), "invalid", None) from None
    except ValueError as exc:  # e.g. NUL in text on PostgreSQL
        raise ApiError(422, str(exc), "invalid", None) from None
    e = done.entry
    return 201, MemoryOut(
        id=e.id,
        owner_id=e.owner_id,
        timestamp=e.timestamp,
        generation=done.generation,
        retracted=False,
    )


@router.post(
    "/memories/{entry_id}/retract", response={200: MemoryOut, **WRITE_ERRORS}, url_name="retract"
)
def retract(request: HttpRequest, entry_id: str):
    """Mark a memory retracted; the row stays (it still happened)."""
    from memory.rows import MemoryWriteError

    _require_staff(request)
    try:
        e = services.retract_memory(_id(entry_id, "entry_id"), user=user_of(request))
    except MemoryWriteError as exc:
        raise ApiError(404, str(exc), "not_found", "entry_id") from None
    return MemoryOut(id=e.id, owner_id=e.owner_id, timestamp=e.timestamp, retracted=True)
