"""Cross-cutting HTTP behaviour: a clear 503 when the database is away (for the API in its one
error shape); every other refusal in its 4xx shape, never a 500 (ErrorShapeMiddleware); HEAD
answered as GET without a body (HeadAsGetMiddleware).

The Content-Security-Policy header is django-csp's (CONTENT_SECURITY_POLICY in settings)."""

from __future__ import annotations

import logging
from collections.abc import Callable

from django.db import DataError, InterfaceError, OperationalError, connections
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.template.loader import render_to_string

from memory.engine.errors import DomainError
from memory.web.api.errors import CODES, error_body, status_of
from memory.web.error_pages import error_response

logger = logging.getLogger(__name__)


class DatabaseUnavailableMiddleware:
    """Turn a lost database connection into a 503 the user can read, then recover by itself.

    Django opens a fresh connection on the next request, so no restart is needed.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not isinstance(exception, OperationalError | InterfaceError):
            return None
        if "readonly" in str(exception).replace(" ", ""):
            message = "The database is read-only; this change was not saved."
        else:
            message = "The database is unavailable right now. Try again in a moment."
        logger.warning("database error on %s: %s", request.path, exception)
        for conn in connections.all(initialized_only=True):
            conn.close_if_unusable_or_obsolete()
        if request.path.startswith("/api/") or "application/json" in request.headers.get(
            "Accept", ""
        ):
            return JsonResponse(error_body(message, CODES[503]), status=503)
        return HttpResponse(render_to_string("503.html", {"message": message}), status=503)


class ErrorShapeMiddleware:
    """A refusal raised by any page or API operation, answered as a 4xx in its shape.

    The API's own handlers (api/errors.py) answer first for what ninja catches; this is the
    net under every page and under what reaches Django: a domain error by its type (404, 422,
    409, 403), and a value the database refuses to hold (psycopg's DataError: a NUL byte, an
    integer out of range) as a 400, so hostile input can never be a 500.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if isinstance(exception, DomainError):
            return error_response(
                request,
                status_of(exception),
                str(exception),
                code=exception.code,
                field=exception.field,
            )
        if isinstance(exception, DataError):
            logger.info(
                "refused a value the database cannot hold on %s: %s", request.path, exception
            )
            return error_response(
                request, 400, "The input holds a value the database cannot store (a NUL byte?)."
            )
        return None


class HeadAsGetMiddleware:
    """HEAD is GET without the body (RFC 9110), for every page: the views are written for GET
    (require_GET would answer HEAD with 405), so HEAD runs them as GET and the body is dropped
    here, its Content-Length kept."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.method != "HEAD":
            return self.get_response(request)
        request.method = "GET"
        response = self.get_response(request)
        if response.streaming:
            response.streaming_content = []  # Content-Length, if it was set, stays
        else:
            length = len(response.content)
            response.content = b""
            response["Content-Length"] = str(length)
        return response
