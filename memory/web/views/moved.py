"""The URLs from before saves (`/viewers/<id>/…`, `/leaks/…`): bookmarks and links pasted in
tickets still land. To the save holding that id when exactly one does (or to the only save
there is); otherwise a page listing the saves to choose from, each link the same path inside
that save."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse

from memory.engine.saves import AmbiguousSave, live_saves, resolve_save
from memory.web.converters import IdConverter

_IDS = IdConverter()
# Django refuses to redirect past 16 KiB (DisallowedRedirect); no id is near this long.
MAX_REDIRECT = 8192


def _viewer_id(path: str) -> str | None:
    """The id in `/viewers/<id>/…`, unescaped the way the <oid:> converter reads it."""
    head, _, rest = path.partition("/viewers/")
    if head or not rest:
        return None
    segment = rest.split("/", 1)[0]
    return _IDS.to_python(segment) if segment else None


@login_required
def moved(request: HttpRequest, rest: str = "") -> HttpResponse:
    path = request.path  # still quoted as sent: it is appended unchanged below the save
    viewer_id = _viewer_id(request.path_info)
    try:
        save = resolve_save(None, object_id=viewer_id)
    except AmbiguousSave as exc:
        names = exc.names or [s.name for s in live_saves()]
        choices = [(name, _within(name, request)) for name in names]
        return render(
            request,
            "memory/choose_save.html",
            {"choices": choices, "path": path, "viewer_id": viewer_id},
            status=200 if choices else 404,
        )
    target = _within(save.name, request)
    if len(target) > MAX_REDIRECT:
        raise Http404("no page at this address")
    return HttpResponseRedirect(target)


def _within(name: str, request: HttpRequest) -> str:
    base = reverse("memory:save", kwargs={"save": name}).rstrip("/")
    query = request.META.get("QUERY_STRING", "")
    return base + request.get_full_path().split("?", 1)[0] + (f"?{query}" if query else "")
