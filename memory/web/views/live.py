"""GET /live/: the version a page polls while a save is live. Cheap on purpose: one
aggregate over the follow rows, and 304 Not Modified (no body) when the caller's ETag is
still the version. Short requests, never held open, so gunicorn's sync workers serve it."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, HttpResponseNotModified, JsonResponse
from django.views.decorators.http import require_GET

from memory.selectors.live import live_status


@require_GET
@login_required
def live_version(request: HttpRequest) -> HttpResponse:
    # ?save=<name>: a page of that save asks about that save alone.
    status = live_status(request.GET.get("save") or None)
    # The liveness is part of the tag: a follower that stops or starts is news to the marker.
    etag = f'"{status.version}.{int(status.live)}"'
    if request.headers.get("If-None-Match") == etag:
        response: HttpResponse = HttpResponseNotModified()
    else:
        response = JsonResponse(status.as_dict())
    response["ETag"] = etag
    response["Cache-Control"] = "no-cache"  # always ask; the 304 keeps asking cheap
    return response
