"""The event page: one moment once, then every witness's line, labels and leaks side by side;
and the search across a save, whose results are events."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django.contrib.auth.decorators import login_required, permission_required
from django.core.exceptions import BadRequest
from django.http import Http404, HttpRequest, HttpResponse
from django.utils.text import slugify
from django.views.decorators.http import require_GET

from memory.engine.cursor import BadCursor
from memory.engine.errors import InvalidInput, NotFound
from memory.roles import READ_PERMISSION
from memory.selectors import events as event_reads
from memory.selectors import pair as pair_reads
from memory.web.saves import reverse
from memory.web.views._common import (
    get_viewer_for_user,
    path_id,
    query_text,
    render_page,
    reverse_each,
)


def line_url(viewer_id: str, entry_id: str, cursor: str) -> str:
    """The line in its owner's buffer: the page of the buffer that ends at it, selected."""
    query = urlencode({"before": cursor, "line": entry_id})
    return f"{reverse('memory:viewer', args=[viewer_id])}?{query}#line-{slugify(entry_id)}"


@require_GET
@login_required
@permission_required(READ_PERMISSION, raise_exception=True)
def event_page(request: HttpRequest, event: str) -> HttpResponse:
    try:
        view = event_reads.event_view(path_id(event, "event"))
    except NotFound as exc:
        raise Http404(str(exc)) from None
    several_places = len(view.places) > 1
    witnesses = [
        {
            "w": w,
            "line_url": line_url(w.viewer.id, w.entry.id, w.buffer_cursor),
            "viewer_url": reverse("memory:viewer", args=[w.viewer.id]),
            "labels": [(row.person, w.labels[row.person.id]) for row in view.participants],
            "place_differs": several_places,
        }
        for w in view.witnesses
    ]
    context: dict[str, Any] = {
        "event": view,
        "witnesses": witnesses,
        "true_names": [
            {"witness": w.name, "person": person} for w, person in view.knows_true_names
        ],
        "json_twin": reverse("api:event", args=[view.id]),
    }
    return render_page(request, "memory/event.html", None, context)


@require_GET
@login_required
@permission_required(READ_PERMISSION, raise_exception=True)
def search_page(request: HttpRequest) -> HttpResponse:
    """?q= words or a name: the save's events one of whose witnesses' lines holds them,
    newest first, each with every witness's line; ?before= pages on."""
    q = query_text(request, "q")
    before = query_text(request, "before")
    error = None
    try:
        results = event_reads.search(q, before=before)
    except BadCursor as exc:
        error = str(exc)
        results = event_reads.search(q)
    page = results.page
    urls = reverse_each("memory:event", [], [e.event for e in page.events])
    base = reverse("memory:search")
    context: dict[str, Any] = {
        "q": q or "",
        "error": error,
        "page": page,
        "found": [
            {
                "e": e,
                "url": urls[e.event],
                "witnesses": [{"w": w, "name": results.names[w.viewer_id]} for w in e.witnesses],
            }
            for e in page.events
        ],
        "older_url": f"{base}?{urlencode({'q': q, 'before': page.older})}" if page.older else None,
        "json_twin": reverse("api:search") + (f"?{urlencode({'q': q})}" if q else ""),
    }
    return render_page(request, "memory/search.html", "search-results", context)


@require_GET
@login_required
def pair_page(request: HttpRequest, viewer_id: str, target_id: str) -> HttpResponse:
    """What the viewer remembers of the target, oldest first: ?after= / ?before= page on."""
    viewer = get_viewer_for_user(request, viewer_id)
    after, before = query_text(request, "after"), query_text(request, "before")
    target = path_id(target_id, "target_id")
    try:
        view = pair_reads.pair_view(viewer, target, after=after, before=before)
    except NotFound as exc:
        raise Http404(str(exc)) from None
    except (BadCursor, InvalidInput) as exc:
        raise BadRequest(str(exc)) from None
    base = reverse("memory:pair", args=[viewer.id, target])
    urls = reverse_each("memory:event", [], [i.event for i in view.items])
    context: dict[str, Any] = {
        "pair": view,
        "viewer": viewer,
        "items": [{"i": i, "event_url": urls[i.event]} for i in view.items],
        "newer_url": f"{base}?{urlencode({'after': view.newer})}" if view.newer else None,
        "older_url": f"{base}?{urlencode({'before': view.older})}" if view.older else None,
        "json_twin": reverse("api:pair", args=[viewer.id, target]),
    }
    return render_page(request, "memory/pair.html", "pair-moments", context)
