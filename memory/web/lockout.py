"""Login throttling with django-axes: a few wrong passwords, then a pause, against guessing.

The policy is in settings (AXES_*): 5 failures per username or per client address within
15 minutes, counted in the database so every web process sees the same count. Once either
count reaches the limit, further attempts are refused with 429 without checking the password
(so a guess cannot succeed while throttled), and are not counted (the pause does not grow).
The three hooks here are the parts of the old policy axes leaves to the project: one spelling
of a username, the sign-in form shown again with the throttled message, and a successful
sign-in forgiving only its own username's failures.
"""

from __future__ import annotations

from typing import Any

from axes.handlers.database import AxesDatabaseHandler
from axes.helpers import get_client_username, get_cool_off
from axes.models import AccessAttempt
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse

THROTTLED_MESSAGE = "Too many failed sign-in attempts. Wait a few minutes before trying again."


def username_key(request: HttpRequest, credentials: dict[str, Any] | None) -> str:
    """The username failures are counted under: "RITA " and "rita" are one user."""
    source = credentials if credentials else request.POST
    return str(source.get("username") or "").strip().lower()


def throttled_response(
    request: HttpRequest, response: HttpResponse | None, credentials: dict[str, Any] | None
) -> HttpResponse:
    """What a sign-in attempt gets when axes has locked its username or address."""
    if getattr(request, "axes_failures_since_start", None) is not None:
        # axes counted this attempt: its password was checked, was wrong, and reached the
        # limit. It is answered like any wrong password; the next attempt is the one refused.
        return response
    retry_after = str(int(get_cool_off(request).total_seconds()))
    context = getattr(response, "context_data", None)
    if not isinstance(response, TemplateResponse) or context is None or "form" not in context:
        throttled = HttpResponse(THROTTLED_MESSAGE, status=429, content_type="text/plain")
        throttled["Retry-After"] = retry_after
        return throttled
    # The sign-in page (ours or the admin's) again, its form's "wrong password" error (axes
    # refused before the password was checked) replaced by the throttled message.
    form = context["form"]
    form.errors.clear()
    form.add_error(None, THROTTLED_MESSAGE)
    throttled = TemplateResponse(
        request, response.template_name, {**context, "throttled": THROTTLED_MESSAGE}, status=429
    )
    throttled["Retry-After"] = retry_after
    return throttled.render()


class LoginFailures(AxesDatabaseHandler):
    """axes' database handler, except that a successful sign-in clears only its own username's
    failures. axes would also clear every failure from the same address, so anyone holding one
    valid account could reset the count of the accounts they are guessing at."""

    def reset_user_attempts(
        self, request: HttpRequest, credentials: dict[str, Any] | None = None
    ) -> int:
        username = get_client_username(request, credentials)
        count, _ = AccessAttempt.objects.filter(username=username).delete()
        return count
