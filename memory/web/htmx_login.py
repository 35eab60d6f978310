"""An htmx request whose session has expired: the browser goes to the login page.

`login_required` answers any request without a session with a 302 to the login page. htmx
follows that redirect inside its XMLHttpRequest and would swap the whole login page (a second
site header and all) into the panel that asked. For an htmx request the redirect becomes an
`HX-Redirect` header instead, so htmx sends the whole window there, with `next` set to the
page the person was on (not the panel's own URL), so signing in brings them back to it.
"""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import urlencode, urlsplit

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import resolve_url
from django.utils.http import url_has_allowed_host_and_scheme


def _page_address(request: HttpRequest) -> str:
    """Where the person is: htmx's HX-Current-URL when it is of this site, else the request."""
    current = request.headers.get("HX-Current-URL", "")
    if current and url_has_allowed_host_and_scheme(
        current, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        parts = urlsplit(current)
        return parts.path + (f"?{parts.query}" if parts.query else "")
    return request.get_full_path()


class HtmxLoginRedirectMiddleware:
    """Turn login_required's redirect of an htmx request into HX-Redirect (see the module)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if not getattr(request, "htmx", False) or response.status_code != 302:
            return response
        login = resolve_url(settings.LOGIN_URL)
        if urlsplit(response.get("Location", "")).path != login:
            return response
        redirect = HttpResponse(status=200)
        redirect["HX-Redirect"] = f"{login}?{urlencode({'next': _page_address(request)})}"
        return redirect
