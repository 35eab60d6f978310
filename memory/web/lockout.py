"""Login throttling with django-axes: a few wrong passwords, then a pause, against guessing.

The policy is in settings (AXES_*, OMNIA_LOGIN_*): three counts within 15 minutes, each with
its own limit: one account from one address, one account from anywhere, and the number of
distinct accounts failing from one address (so one account's failures never lock out
another). Counted in the database so every web process sees the same count. Once a
count reaches its limit, further attempts are refused with 429 without checking the password
(so a guess cannot succeed while throttled), and are not counted (the pause does not grow).
The hooks here are what axes leaves to the project: one spelling of a username, the client
address behind a trusted proxy, the sign-in form shown again with the throttled message, a
limit per count, and a successful sign-in forgiving only its own username's failures.
"""

from __future__ import annotations

import ipaddress
from typing import Any

from axes.handlers.database import AxesDatabaseHandler
from axes.helpers import get_client_username, get_cool_off
from axes.models import AccessAttempt
from django.conf import settings
from django.db.models import Sum
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse

THROTTLED_MESSAGE = "Too many failed sign-in attempts. Wait a few minutes before trying again."


def username_key(request: HttpRequest, credentials: dict[str, Any] | None) -> str:
    """The username failures are counted under: "RITA " and "rita" are one user."""
    source = credentials if credentials else request.POST
    return str(source.get("username") or "").strip().lower()


def _trusted(address: str) -> bool:
    try:
        ip = ipaddress.ip_address(address.strip())
    except ValueError:
        return False
    return any(
        ip in ipaddress.ip_network(proxy, strict=False) for proxy in settings.OMNIA_TRUSTED_PROXIES
    )


def client_address(request: HttpRequest) -> str:
    """The address failures are counted under: REMOTE_ADDR, unless that is a trusted proxy
    (settings.OMNIA_TRUSTED_PROXIES); then the nearest X-Forwarded-For hop that is not one.
    Only hops the trusted proxies appended are believed: the left end is the client's to write."""
    remote = request.META.get("REMOTE_ADDR", "")
    if not settings.OMNIA_TRUSTED_PROXIES or not _trusted(remote):
        return remote
    hops = [h.strip() for h in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",")]
    for hop in reversed([h for h in hops if h]):
        if _trusted(hop):
            continue
        try:
            return str(ipaddress.ip_address(hop))
        except ValueError:
            return remote  # a hop that is no address: the chain cannot be believed past it
    return remote


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
    """axes' database handler, with a limit per count and a narrower reset.

    axes compares the largest of its counts with one limit (AXES_FAILURE_LIMIT). Here each
    count is scaled to that limit by its own (settings.AXES_LOCKOUT_PARAMETERS, in order: the
    account from this address, the account from anywhere, the accounts failing from this
    address), so a count reaches AXES_FAILURE_LIMIT exactly when it reaches its own limit.

    A successful sign-in clears only its own username's failures. axes would also clear every
    failure from the same address, so anyone holding one valid account could reset the count
    of the accounts they are guessing at."""

    def get_failures(self, request: HttpRequest, credentials: dict[str, Any] | None = None) -> int:
        base = settings.AXES_FAILURE_LIMIT
        limits = {
            ("username", "ip_address"): base,
            ("username",): settings.OMNIA_LOGIN_ACCOUNT_FAILURE_LIMIT,
            ("ip_address",): settings.OMNIA_LOGIN_ADDRESS_ACCOUNT_LIMIT,
        }
        worst = 0
        for parameters, attempts in zip(
            settings.AXES_LOCKOUT_PARAMETERS,
            self.get_user_attempts(request, credentials),
            strict=True,
        ):
            key = tuple(parameters)
            if key == ("ip_address",):
                # Accounts, not failures: one user's typos count once however many.
                count = attempts.values("username").distinct().count()
            else:
                count = attempts.aggregate(total=Sum("failures_since_start"))["total"] or 0
            worst = max(worst, count * base // max(limits.get(key, base), 1))
        return worst

    def reset_user_attempts(
        self, request: HttpRequest, credentials: dict[str, Any] | None = None
    ) -> int:
        username = get_client_username(request, credentials)
        count, _ = AccessAttempt.objects.filter(username=username).delete()
        return count
