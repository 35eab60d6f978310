"""Cross-cutting HTTP behaviour: a clear 503 when the database is away (for the API in its one
error shape).

The Content-Security-Policy header is django-csp's (CONTENT_SECURITY_POLICY in settings)."""

from __future__ import annotations

import logging
from collections.abc import Callable

from django.db import InterfaceError, OperationalError, connections
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.template.loader import render_to_string

from memory.web.api.errors import CODES, error_body

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
