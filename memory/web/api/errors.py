"""The API's one error shape, `{"detail": str, "code": str, "field": str | null}`
(schemas.ErrorOut), and the handlers that give it to every refusal.

Domain errors are mapped by their type, never by their message.
"""

from __future__ import annotations

from typing import Any

from django.http import Http404, HttpRequest, HttpResponse
from ninja import NinjaAPI
from ninja.errors import AuthenticationError, HttpError, ValidationError

from memory.engine.errors import Conflict, DomainError, Forbidden, InvalidInput, NotFound
from memory.web.schemas import ErrorOut

READ_ERRORS = {401: ErrorOut, 404: ErrorOut, 422: ErrorOut}
WRITE_ERRORS = {
    400: ErrorOut,
    401: ErrorOut,
    403: ErrorOut,
    404: ErrorOut,
    415: ErrorOut,
    422: ErrorOut,
}

CODES = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    409: "conflict",
    415: "unsupported",
    422: "invalid",
    503: "unavailable",
}
_STATUS_OF_KIND = ((NotFound, 404), (InvalidInput, 422), (Conflict, 409), (Forbidden, 403))


class ApiError(Exception):
    """A refusal whose status no domain kind names (a bad cursor is a 400)."""

    def __init__(self, status: int, detail: str, code: str, field: str | None = None) -> None:
        super().__init__(detail)
        self.status, self.detail, self.code, self.field = status, detail, code, field


def status_of(exc: DomainError) -> int:
    """The HTTP status of a domain refusal, by its type (never by its message)."""
    for kind, status in _STATUS_OF_KIND:
        if isinstance(exc, kind):
            return status
    return 400


def error_body(detail: str, code: str, field: str | None = None) -> dict[str, Any]:
    return {"detail": detail, "code": code, "field": field}


def install_error_handlers(api: NinjaAPI) -> None:
    """Register the handlers that give every API error the ErrorOut shape (idempotent)."""

    def respond(request: HttpRequest, status: int, detail: str, code: str, field: str | None):
        return api.create_response(request, error_body(detail, code, field), status=status)

    def on_api_error(request: HttpRequest, exc: ApiError) -> HttpResponse:
        return respond(request, exc.status, exc.detail, exc.code, exc.field)

    def on_validation(request: HttpRequest, exc: ValidationError) -> HttpResponse:
        first: dict[str, Any] = exc.errors[0] if exc.errors else {}
        loc = [
            str(p) for p in first.get("loc", ()) if p not in ("body", "query", "path", "payload")
        ]
        field = ".".join(loc) or None
        detail = f"{field or 'input'}: {first.get('msg', 'invalid')}"
        return respond(request, 422, detail, "invalid", field)

    def on_http_error(request: HttpRequest, exc: HttpError) -> HttpResponse:
        if isinstance(exc.__cause__, ApiError):  # ninja wraps its parser's refusal in a 400
            cause = exc.__cause__
            return respond(request, cause.status, cause.detail, cause.code, cause.field)
        status = exc.status_code
        code = (
            "unauthorized" if isinstance(exc, AuthenticationError) else CODES.get(status, "error")
        )
        detail = "log in or send Authorization: Bearer <token>" if status == 401 else str(exc)
        return respond(request, status, detail, code, None)

    def on_domain_error(request: HttpRequest, exc: DomainError) -> HttpResponse:
        return respond(request, status_of(exc), str(exc), exc.code, exc.field)

    def on_404(request: HttpRequest, exc: Http404) -> HttpResponse:
        return respond(request, 404, str(exc) or "not found", "not_found", None)

    api.add_exception_handler(ApiError, on_api_error)
    api.add_exception_handler(ValidationError, on_validation)
    api.add_exception_handler(HttpError, on_http_error)
    api.add_exception_handler(Http404, on_404)
    api.add_exception_handler(DomainError, on_domain_error)
