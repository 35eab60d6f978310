"""The viewer page and three of its panels (buffer, sessions, faces): each one URL that
answers with the whole page or, to htmx, the panel alone (viewer_panels.py makes their
context; the aliases panel is in aliases.py)."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_GET

from memory.web.views._common import get_viewer_for_user, render_page
from memory.web.views.viewer_panels import panel_view, viewer_context


@require_GET
@login_required
def viewer_page(request: HttpRequest, viewer_id: str) -> HttpResponse:
    viewer = get_viewer_for_user(request, viewer_id)
    return render_page(
        request, "memory/viewer.html", "viewer-panels", viewer_context(request, viewer)
    )


buffer_panel = panel_view("buffer-panel", "api:buffer")
sessions_panel = panel_view("sessions-panel", "api:sessions")
faces_panel = panel_view("faces-panel", "api:faces")
