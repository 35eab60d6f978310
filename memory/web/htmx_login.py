"""An htmx request whose session has expired: sign in again without losing the page.

`login_required` answers any request without a session with a 302 to the login page. htmx
follows that redirect inside its XMLHttpRequest and would swap the whole login page (a second
site header and all) into the panel that asked. So, for an htmx request:

- a read (GET, HEAD) becomes an `HX-Redirect` header: htmx sends the whole window to the
  login page, with `next` set to the page the person was on (not the panel's own URL), so
  signing in brings them back to it. Nothing typed is at stake.
- a write (an alias Save, Forget, Accept …) becomes a 401 that swaps nothing: the form keeps
  what the person typed, and htmx-hardening.js offers to sign in (here, or in a new tab) and
  to send the same edit again. `X-Omnia-Reauth` says why ("login"); `X-Omnia-Login` is the
  login address, `next` set as above.

A write refused by the CSRF check (the token went stale: the person signed out and in again
in another tab, or the cookie was cleared) gets the same treatment from
error_pages.csrf_failure, with `X-Omnia-Reauth: csrf`.
"""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import urlencode, urlsplit

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import resolve_url
from django.utils.http import url_has_allowed_host_and_scheme

REAUTH_HEADER = "X-Omnia-Reauth"
LOGIN_HEADER = "X-Omnia-Login"


def _page_address(request: HttpRequest) -> str:
    """Where the person is: htmx's HX-Current-URL when it is of this site, else the request."""
    current = request.headers.get("HX-Current-URL", "")
    if current and url_has_allowed_host_and_scheme(
        current, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        parts = urlsplit(current)
        return parts.path + (f"?{parts.query}" if parts.query else "")
    return request.get_full_path()


def login_address(request: HttpRequest) -> str:
    """The login page, coming back to the page the person was on."""
    return f"{resolve_url(settings.LOGIN_URL)}?{urlencode({'next': _page_address(request)})}"


def mark_reauth(response: HttpResponse, request: HttpRequest, reason: str) -> HttpResponse:
    """Tell htmx-hardening.js that this write needs a new sign-in or token, and where to sign in."""
    response[REAUTH_HEADER] = reason
    response[LOGIN_HEADER] = login_address(request)
    return response


class HtmxLoginRedirectMiddleware:
    """Turn login_required's redirect of an htmx request into HX-Redirect (reads) or a 401
    the page can recover from (writes); see the module."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if not getattr(request, "htmx", False) or response.status_code != 302:
            return response
        login = resolve_url(settings.LOGIN_URL)
        if urlsplit(response.get("Location", "")).path != login:
            return response
        if request.method not in ("GET", "HEAD"):
            refused = HttpResponse(
                "Your session has ended: sign in again, then send the change again.",
                status=401,
                content_type="text/plain; charset=utf-8",
            )
            return mark_reauth(refused, request, "login")
        redirect = HttpResponse(status=200)
        redirect["HX-Redirect"] = login_address(request)
        return redirect
