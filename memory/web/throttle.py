"""Login throttling: a few wrong passwords, then a pause, against password guessing.

Counts failed logins in the cache per username and per client address over a window; once
either count reaches the limit, further attempts are refused with 429 (without checking the
password, so a guess cannot succeed while throttled) until the window expires. A successful
login clears its username's count.

The counts live in the `throttle` cache, a DatabaseCache (table memory_login_throttle): every
gunicorn worker reads and writes the same counts, so the limit is the limit, not N × it.
"""

from __future__ import annotations

import hashlib
from typing import Any

from django.conf import settings
from django.contrib.auth.views import LoginView
from django.core.cache import caches
from django.forms.utils import ErrorDict
from django.http import HttpRequest, HttpResponse

MAX_FAILURES = int(getattr(settings, "OMNIA_LOGIN_MAX_FAILURES", 5))
WINDOW_SECONDS = int(getattr(settings, "OMNIA_LOGIN_WINDOW_SECONDS", 900))
THROTTLED_MESSAGE = "Too many failed sign-in attempts. Wait a few minutes before trying again."


def _key(kind: str, value: str) -> str:
    # Hashed so any username (spaces, unicode, long) makes a valid cache key.
    digest = hashlib.sha256(value.strip().lower().encode("utf-8")).hexdigest()[:32]
    return f"omnia:login:{kind}:{digest}"


def client_address(request: HttpRequest) -> str:
    # REMOTE_ADDR only: X-Forwarded-For is client-controlled unless a trusted proxy rewrites it.
    return request.META.get("REMOTE_ADDR", "") or "unknown"


def throttle_keys(request: HttpRequest) -> list[str]:
    keys = [_key("addr", client_address(request))]
    username = request.POST.get("username", "")
    if username:
        keys.append(_key("user", username))
    return keys


def is_throttled(request: HttpRequest) -> bool:
    cache = caches["throttle"]
    return any((cache.get(k) or 0) >= MAX_FAILURES for k in throttle_keys(request))


def record_failure(request: HttpRequest) -> None:
    cache = caches["throttle"]
    for k in throttle_keys(request):
        cache.add(k, 0, WINDOW_SECONDS)
        try:
            cache.incr(k)
        except ValueError:  # expired between add and incr
            cache.set(k, 1, WINDOW_SECONDS)


def clear_failures(request: HttpRequest) -> None:
    username = request.POST.get("username", "")
    if username:
        caches["throttle"].delete(_key("user", username))


class ThrottledLoginView(LoginView):
    """Django's LoginView, refusing with 429 after MAX_FAILURES failures in WINDOW_SECONDS."""

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if is_throttled(request):
            # A bound form whose errors are set by hand: asking it to validate would run
            # authenticate(), i.e. check the very password we are refusing to check.
            form = self.get_form()
            form.cleaned_data = {}
            form._errors = ErrorDict()
            form.add_error(None, THROTTLED_MESSAGE)
            context = self.get_context_data(form=form, throttled=THROTTLED_MESSAGE)
            response = self.render_to_response(context)
            response.status_code = 429
            response.headers["Retry-After"] = str(WINDOW_SECONDS)
            return response
        return super().post(request, *args, **kwargs)

    def form_invalid(self, form: Any) -> HttpResponse:
        record_failure(self.request)
        return super().form_invalid(form)

    def form_valid(self, form: Any) -> HttpResponse:
        clear_failures(self.request)
        return super().form_valid(form)
