"""One entry as the viewer reads it: a buffer row, else a long-term entry with its notes."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.urls import reverse
from django.views.decorators.http import require_GET

from memory.engine.errors import NotFound
from memory.web.selectors import buffer as buffer_reads
from memory.web.selectors import faces as face_reads
from memory.web.views._common import get_viewer_for_user, path_id, render_page


@require_GET
@login_required
def entry_page(request: HttpRequest, viewer_id: str, entry_id: str) -> HttpResponse:
    """A buffer row, else a long-term entry, as the viewer reads it, with its notes."""
    viewer = get_viewer_for_user(request, viewer_id)
    entry_id = path_id(entry_id, "entry_id")
    context: dict[str, Any] = {
        "viewer": viewer,
        "entry": None,
        "longterm": None,
        "json_twin": reverse("api:entry", args=[viewer.id, entry_id]),
    }
    try:
        context["entry"] = buffer_reads.get_entry(viewer, entry_id)
        return render_page(request, "memory/entry.html", None, context)
    except NotFound:
        pass
    try:
        context["longterm"] = face_reads.long_term_entry(viewer.id, entry_id)
    except NotFound as exc:
        raise Http404(str(exc)) from None
    context["json_twin"] = reverse("api:long_term_entry", args=[viewer.id, entry_id])
    return render_page(request, "memory/entry.html", None, context)
