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

from memory.engine.buffer.rendered import RenderedEntry
from memory.engine.cursor import BadCursor
from memory.engine.errors import Conflict, DomainError, Forbidden, InvalidInput, NotFound
from memory.engine.intents import IntentError
from memory.engine.knowledge import Viewer, get_viewer
from memory.engine.longterm import reader as longterm
from memory.engine.projections import doors
from memory.web import selectors, services
from memory.web.auth import API_AUTH, user_of
from memory.web.schemas import (
    AbstractIn,
    AbstractOut,
    AliasChangeOut,
    AliasIn,
    AliasListOut,
    AliasOut,
    BufferEntryOut,
    BufferPageOut,
    CycleOut,
    DigestOut,
    EntityListOut,
    EntityOut,
    EntryOut,
    EpisodePageOut,
    ErrorOut,
    FacesOut,
    LeaksOut,
    LongTermEntryOut,
    MemoryIn,
    MemoryOut,
    PromptOut,
    RebuildOut,
    SearchOut,
    SessionPageOut,
    SlugOut,
    VerifyOut,
)

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
    409: "conflict",
    422: "invalid",
    503: "unavailable",
}


def status_of(exc: DomainError) -> int:
    """The HTTP status of a domain refusal, by its type (never by its message)."""
    for kind, status in ((NotFound, 404), (InvalidInput, 422), (Conflict, 409), (Forbidden, 403)):
        if isinstance(exc, kind):
            return status
    return 400


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

    def on_domain_error(request, exc: DomainError):
        return _error(api, request, status_of(exc), str(exc), exc.code, exc.field)

    def on_404(request, exc: Http404):
        return _error(api, request, 404, str(exc) or "not found", "not_found", None)

    api.add_exception_handler(ApiError, on_api_error)
    api.add_exception_handler(ValidationError, on_validation)
    api.add_exception_handler(HttpError, on_http_error)
    api.add_exception_handler(Http404, on_404)
    api.add_exception_handler(DomainError, on_domain_error)


def _id(value: str, what: str) -> str:
    # PostgreSQL refuses NUL in text; such an id can name nothing, so it is a 404, not a 500.
    if "\x00" in value:
        raise ApiError(404, f"no {what} with that id", "not_found", what)
    return value


def _viewer(viewer_id: str) -> Viewer:
    try:
        return get_viewer(_id(viewer_id, "viewer_id"))
    except NotFound as exc:
        raise ApiError(404, str(exc), "not_found", "viewer_id") from None


def _require_staff(request: HttpRequest) -> None:
    if not services.can_edit(user_of(request)):
        raise ApiError(403, "writes need a staff account", "forbidden")


def _require_admin(request: HttpRequest) -> None:
    if not services.can_admin(user_of(request)):
        raise ApiError(403, "a rebuild needs an admin (superuser) account", "forbidden")


def _text_param(value: str | None, field: str) -> str | None:
    if value is not None and "\x00" in value:
        raise ApiError(422, f"{field} must not contain NUL characters", "invalid", field)
    return value


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
    from memory.engine.write_door import MemoryWriteError, UnknownOwner

    _require_staff(request)
    viewer_id = _id(viewer_id, "viewer_id")
    try:
        # The write door looks the owner up itself (with its world's clock): asking here
        # first would be one more round trip on the hottest path.
        done = services.remember_memory(
            viewer_id,
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
    except UnknownOwner:
        raise ApiError(404, f"no entity with id {viewer_id!r}", "not_found", "viewer_id") from None
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
    from memory.engine.write_door import MemoryWriteError

    _require_staff(request)
    try:
        e = services.retract_memory(_id(entry_id, "entry_id"), user=user_of(request))
    except MemoryWriteError as exc:
        raise ApiError(404, str(exc), "not_found", "entry_id") from None
    return MemoryOut(id=e.id, owner_id=e.owner_id, timestamp=e.timestamp, retracted=True)


# --- sessions, digest, episodes ------------------------------------------------------------------


def _door(name: str, viewer_id: str, **kwargs):
    door = {"sessions": doors.sessions, "digest": doors.digest, "episodes": doors.episodes}[name]
    return door(viewer_id, **kwargs)


def _limit(limit: int) -> int:
    if not 1 <= limit <= 500:
        raise ApiError(422, "limit must be between 1 and 500", "invalid", "limit")
    return limit


@router.get(
    "/viewers/{viewer_id}/sessions",
    response={200: SessionPageOut, **READ_ERRORS},
    url_name="sessions",
)
def sessions(request: HttpRequest, viewer_id: str, limit: int = 50, before: str | None = None):
    """The viewer's session projections, newest first; live counts are computed at read time."""
    viewer = _viewer(viewer_id)
    page = _door(
        "sessions", viewer.id, limit=_limit(limit), before=_text_param(before, "before") or None
    )
    return {
        "viewer_id": viewer.id,
        "items": [vars(item) for item in page.items],
        "next_cursor": page.next_cursor,
        "rows_visited": page.rows_visited,
    }


@router.get(
    "/viewers/{viewer_id}/digest", response={200: DigestOut, **READ_ERRORS}, url_name="digest"
)
def digest(request: HttpRequest, viewer_id: str, known_hash: str | None = None):
    """Viewer-relative lines naming its sessions, and their hash; pass `known_hash` to be told
    `unchanged` (and handed no lines) when nothing moved."""
    viewer = _viewer(viewer_id)
    answer = _door("digest", viewer.id, known_hash=_text_param(known_hash, "known_hash"))
    return {
        "viewer_id": viewer.id,
        "lines": answer.lines,
        "hash": answer.hash,
        "unchanged": answer.unchanged,
        "rows_visited": answer.rows_visited,
    }


@router.get(
    "/viewers/{viewer_id}/episodes",
    response={200: EpisodePageOut, **READ_ERRORS},
    url_name="episodes",
)
def episodes(request: HttpRequest, viewer_id: str, limit: int = 50, before: str | None = None):
    """The viewer's episodes, newest first; the open one (if any) leads."""
    viewer = _viewer(viewer_id)
    page = _door(
        "episodes", viewer.id, limit=_limit(limit), before=_text_param(before, "before") or None
    )
    return {
        "viewer_id": viewer.id,
        "items": [vars(item) for item in page.items],
        "next_cursor": page.next_cursor,
        "rows_visited": page.rows_visited,
    }


# --- long-term memory: faces, entries, search, slugs --------------------------------------------


def _face_out(item, shadowed: dict, superseded: dict, undeliverable: dict) -> dict[str, Any]:
    state = (
        "shadowed" if item.id in shadowed else "superseded" if item.id in superseded else "default"
    )
    return {
        **selectors.face_item_dict(item),
        "state": state,
        "shadowed_by": shadowed.get(item.id),
        "superseded_by": superseded.get(item.id),
        "undeliverable": undeliverable.get(item.id),
    }


@router.get(
    "/viewers/{viewer_id}/faces", response={200: FacesOut, **READ_ERRORS}, url_name="faces"
)
def faces(request: HttpRequest, viewer_id: str, include_shadowed: bool = False):
    """The viewer's long-term listing: the default face, or with shadowed and superseded
    entries brought back (tagged) when `include_shadowed`."""
    viewer = _viewer(viewer_id)
    view = selectors.faces_view(viewer.id, include_shadowed=include_shadowed)
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
    }


@router.get(
    "/viewers/{viewer_id}/long-term/{entry_id}",
    response={200: LongTermEntryOut, **READ_ERRORS},
    url_name="long_term_entry",
)
def long_term_entry(request: HttpRequest, viewer_id: str, entry_id: str):
    """One long-term entry by id: always delivered, with notes naming what shadows or
    supersedes it, and its provenance (its rollup, or the members it absorbed)."""
    viewer = _viewer(viewer_id)
    try:
        found = selectors.long_term_entry(viewer.id, _id(entry_id, "entry_id"))
    except NotFound as exc:
        raise ApiError(404, str(exc), "not_found", "entry_id") from None
    return {
        "viewer_id": viewer.id,
        "item": _face_out(found.item, *selectors.face_maps(viewer.id)),
        "notes": found.notes,
        "rollup": found.rollup,
        "members": found.members,
    }


@router.get(
    "/viewers/{viewer_id}/search", response={200: SearchOut, **READ_ERRORS}, url_name="search"
)
def search(request: HttpRequest, viewer_id: str, q: str, include_shadowed: bool = False):
    """Search the viewer's long-term memory (default face unless `include_shadowed`)."""
    viewer = _viewer(viewer_id)
    _text_param(q, "q")
    items = longterm.search_long_term(viewer.id, q, include_shadowed=include_shadowed)
    maps = selectors.face_maps(viewer.id)
    return {
        "viewer_id": viewer.id,
        "q": q,
        "include_shadowed": include_shadowed,
        "items": [_face_out(item, *maps) for item in items],
    }


@router.get(
    "/viewers/{viewer_id}/resolve",
    response={200: SlugOut, **READ_ERRORS},
    url_name="slug",
)
def resolve_slug(request: HttpRequest, viewer_id: str, slug: str, include_shadowed: bool = False):
    """Resolve a bare slug the way the viewer's prompt would (shadowed entries lose)."""
    viewer = _viewer(viewer_id)
    item = longterm.resolve_slug(viewer.id, _id(slug, "slug"), include_shadowed=include_shadowed)
    if item is None:
        raise ApiError(404, f"{viewer.id} resolves no entry for slug {slug!r}", "not_found", "slug")
    return {
        "viewer_id": viewer.id,
        "slug": slug,
        "item": _face_out(item, *selectors.face_maps(viewer.id)),
    }


# --- prompt and leaks ----------------------------------------------------------------------------


@router.get(
    "/viewers/{viewer_id}/prompt", response={200: PromptOut, **READ_ERRORS}, url_name="prompt"
)
def prompt(request: HttpRequest, viewer_id: str):
    """The viewer's prompt context and the leak findings in it (offsets into `text`)."""
    viewer = _viewer(viewer_id)
    view = selectors.prompt_view(viewer)
    return {
        "viewer_id": viewer.id,
        "text": view.text,
        "sections": [{"name": s.name, "text": s.text} for s in view.sections],
        "findings": view.findings,
    }


@router.get("/leaks", response={200: LeaksOut, **READ_ERRORS}, url_name="leaks")
def leaks(request: HttpRequest, viewer: str | None = None, kind: str | None = None):
    """Every leak finding in every viewer's prompt context, filtered by viewer and kind."""
    if viewer:
        viewer = _viewer(viewer).id
    items = selectors.leak_findings(viewer_id=viewer or None, kind=_text_param(kind, "kind") or None)
    return {"items": items, "count": len(items)}


# --- abstraction and projection doors --------------------------------------------------------------


@router.post(
    "/viewers/{viewer_id}/abstract",
    response={201: AbstractOut, 409: ErrorOut, **WRITE_ERRORS},
    url_name="abstract",
)
def abstract(request: HttpRequest, viewer_id: str, payload: AbstractIn):
    """Roll members up into one long-term entry, pinned to `expected_generation`: a stale
    generation or an already-absorbed member is a 409 and nothing lands."""
    from memory.engine.abstract import AbstractConflict, AbstractError
    from memory.engine.shards import generation_of

    _require_staff(request)
    viewer = _viewer(viewer_id)
    for field_name in ("name", "body", "slug"):
        _text_param(getattr(payload, field_name), field_name)
    for member in payload.member_ids:
        _text_param(member, "member_ids")
    try:
        rollup = services.abstract_memories(
            viewer.id,
            payload.member_ids,
            name=payload.name,
            body=payload.body,
            slug=payload.slug,
            expected_generation=payload.expected_generation,
            user=user_of(request),
        )
    except AbstractConflict as exc:
        field = "expected_generation" if "generation" in str(exc) else "member_ids"
        raise ApiError(409, str(exc), "conflict", field) from None
    except AbstractError as exc:
        raise ApiError(422, str(exc), "invalid", "member_ids") from None
    return 201, {
        "id": rollup.id,
        "owner_id": viewer.id,
        "scope": rollup.scope_id,
        "slug": rollup.slug,
        "name": rollup.name,
        "generation": generation_of(viewer.id),
        "member_ids": payload.member_ids,
    }


@router.post("/projections/cycle", response={200: CycleOut, **WRITE_ERRORS}, url_name="run_cycle")
def run_cycle(request: HttpRequest):
    """Fold every row written since each shard's watermark (the incremental cycle)."""
    _require_staff(request)
    return services.run_cycle(user=user_of(request))


@router.post("/projections/rebuild", response={200: RebuildOut, **WRITE_ERRORS}, url_name="rebuild")
def rebuild(request: HttpRequest):
    """Re-fold every session and episode from the buffer (admins only; never on a timer)."""
    _require_admin(request)
    return services.rebuild_projections(user=user_of(request))


@router.post("/projections/verify", response={200: VerifyOut, **WRITE_ERRORS}, url_name="verify")
def verify(request: HttpRequest):
    """Fold everything afresh in memory and compare with the stored rows; writes nothing."""
    _require_staff(request)
    return services.verify_projections()
