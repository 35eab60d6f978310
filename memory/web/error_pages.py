"""Every refusal the site answers, in one place: the styled pages (400, 403, 404, 413, 500)
with the site's header and the useful message, a fragment for an htmx panel, and the API's
one JSON shape for /api/ (and any caller that asks for JSON).

omnia_site/urls.py names the handlers here; memory.web.middleware.ErrorShapeMiddleware sends
the domain errors and the database's refusals of a value (NUL on PostgreSQL) here too, so
no input reaches a 500.
"""

from __future__ import annotations

import logging
from urllib.parse import urlencode, urlsplit

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render, resolve_url
from django.urls import Resolver404
from django.utils.cache import patch_vary_headers
from django.utils.html import escape
from django.utils.http import url_has_allowed_host_and_scheme

from memory.web.api.errors import CODES, error_body
from memory.web.htmx_login import mark_reauth

logger = logging.getLogger(__name__)

CODES_MORE = {**CODES, 413: "too_large", 500: "server_error"}
TITLES = {
    400: "Bad request",
    403: "Not allowed",
    404: "Not found",
    409: "Conflict",
    413: "Request too large",
    422: "Invalid input",
    500: "Something went wrong",
}
DEFAULT_MESSAGES = {
    400: "The request could not be understood.",
    403: "Your account's role does not allow this.",
    404: "Nothing is at this address.",
    413: "The request body is larger than this site accepts.",
    500: "Something went wrong on our side. It has been logged; try again in a moment.",
}


def wants_json(request: HttpRequest) -> bool:
    if request.path.startswith("/api/"):
        return True
    accept = request.headers.get("Accept", "")
    return "application/json" in accept and "text/html" not in accept


def error_response(
    request: HttpRequest,
    status: int,
    message: str | None = None,
    *,
    code: str | None = None,
    field: str | None = None,
) -> HttpResponse:
    """The refusal in the shape the caller reads: JSON, an htmx panel fragment, or a page."""
    message = message or DEFAULT_MESSAGES.get(status) or TITLES.get(status, "Error")
    code = code or CODES_MORE.get(status, "error")
    if wants_json(request):
        return JsonResponse(error_body(message, code, field), status=status)
    context = {
        "status": status,
        "title": TITLES.get(status, "Error"),
        "message": message,
        "field": field,
    }
    htmx = request.headers.get("HX-Request") == "true"
    template = "error.html#error-panel" if htmx else f"{status}.html"
    try:
        response = render(request, template, context, status=status)
    except Exception:  # a page that cannot render (the database is away): plain words
        if template != "error.html" and not htmx:
            try:
                response = render(request, "error.html", context, status=status)
            except Exception:
                logger.exception("error page %s could not render", status)
                response = _plain(status, message)
        else:
            logger.exception("error page %s could not render", status)
            response = _plain(status, message)
    patch_vary_headers(response, ("HX-Request", "Accept"))
    return response


def _plain(status: int, message: str) -> HttpResponse:
    return HttpResponse(
        f"<!doctype html><title>{status}</title><h1>{escape(TITLES.get(status, 'Error'))}</h1>"
        f"<p>{escape(message)}</p><p><a href='/'>Overview</a></p>",
        status=status,
    )


def _message(exception: BaseException | None) -> str | None:
    """The exception's own words when they were written for a person (ours), else None."""
    if exception is None or isinstance(exception, Resolver404):
        return None
    args = getattr(exception, "args", ())
    if args and isinstance(args[0], str) and args[0]:
        return args[0]
    return None


# --- Django's handlers (omnia_site/urls.py names these) -----------------------------------


def bad_request(request: HttpRequest, exception: BaseException | None = None) -> HttpResponse:
    if isinstance(exception, RequestDataTooBig):
        return error_response(request, 413)
    return error_response(request, 400, _message(exception))


def permission_denied(request: HttpRequest, exception: BaseException | None = None) -> HttpResponse:
    return error_response(request, 403, _message(exception))


def page_not_found(request: HttpRequest, exception: BaseException | None = None) -> HttpResponse:
    return error_response(request, 404, _message(exception))


def server_error(request: HttpRequest) -> HttpResponse:
    return error_response(request, 500)


# --- the CSRF check's refusal (settings.CSRF_FAILURE_VIEW) --------------------------------------

CSRF_TITLE = "Your change was not saved"
CSRF_MESSAGE = (
    "This page's security token no longer matches your browser's: you signed out or in "
    "again in another tab, your cookies were cleared, or the page was open a very long time. "
    "Nothing was changed."
)


def csrf_failure(request: HttpRequest, reason: str = "") -> HttpResponse:
    """A write the CSRF check refused, said in words with the way to get the change back.

    htmx writes get a 403 that swaps nothing (the form keeps what was typed) and the page
    offers to send it again with a fresh token (htmx_login.py, htmx-hardening.js); the API its
    one JSON shape; a plain form post a styled page. Django's `reason` names the failed check
    (no cookie, wrong token, bad referer): Django logs it (django.security.csrf); a person is
    told what it means instead."""
    if wants_json(request):
        detail = f"{CSRF_TITLE}: the CSRF token is missing or stale. {CSRF_MESSAGE}"
        return JsonResponse(error_body(detail, "csrf_failed"), status=403)
    if request.headers.get("HX-Request") == "true":
        refused = HttpResponse(
            f"{CSRF_MESSAGE} Send it again to save it.",
            status=403,
            content_type="text/plain; charset=utf-8",
        )
        patch_vary_headers(refused, ("HX-Request", "Accept"))
        return mark_reauth(refused, request, "csrf")
    back = _same_site_referer(request)
    # Signing in comes back to the page the form was on (the post's own address may be a
    # write-only URL that a GET would refuse).
    next_page = urlsplit(back).path if back else resolve_url("memory:overview")
    context = {
        "status": 403,
        "title": CSRF_TITLE,
        "message": CSRF_MESSAGE,
        "back": back,
        "login_url": f"{resolve_url(settings.LOGIN_URL)}?{urlencode({'next': next_page})}",
    }
    response = render(request, "403_csrf.html", context, status=403)
    patch_vary_headers(response, ("HX-Request", "Accept"))
    return response


def _same_site_referer(request: HttpRequest) -> str | None:
    """The page the form was on, when it is this site's (never another site's address)."""
    referer = request.headers.get("Referer", "")
    if referer and url_has_allowed_host_and_scheme(
        referer, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return referer
    return None
