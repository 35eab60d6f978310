"""The event page: one moment once, then every witness's line, labels and leaks side by side."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django.contrib.auth.decorators import login_required, permission_required
from django.http import Http404, HttpRequest, HttpResponse
from django.utils.text import slugify
from django.views.decorators.http import require_GET

from memory.engine.errors import NotFound
from memory.roles import READ_PERMISSION
from memory.selectors import events as event_reads
from memory.web.saves import reverse
from memory.web.views._common import path_id, render_page


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
