"""The overview: every viewer, each world's knowledge matrix, leak counts and projection
status, and the header picker's no-JS path."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django.contrib.auth.decorators import login_required, permission_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.http import require_GET

from memory.web.roles import EDIT_PERMISSION, READ_PERMISSION
from memory.web.selectors import leaks as leak_reads
from memory.web.selectors import projections as projection_reads
from memory.web.selectors import viewers as viewer_reads
from memory.web.views._common import get_viewer_for_user, query_text, render_page

MATRIX_MAX_ENTITIES = 60


@require_GET
@login_required
@permission_required(READ_PERMISSION, raise_exception=True)
def overview(request: HttpRequest) -> HttpResponse:
    q = query_text(request, "q")
    viewers = viewer_reads.list_viewers(q=q)
    worlds = []
    for world in viewer_reads.list_worlds():
        entities, matrix = viewer_reads.knowledge_matrix(world.id)
        too_big = len(entities) > MATRIX_MAX_ENTITIES
        rows = []
        if not too_big:
            for viewer_obj in entities:
                cells = [(target, matrix[viewer_obj.id].get(target.id)) for target in entities]
                rows.append((viewer_obj, cells))
        worlds.append({"world": world, "entities": entities, "rows": rows, "too_big": too_big})
    context = {
        **projection_context(request),
        "q": q or "",
        "viewers": viewers,
        "worlds": worlds,
        "json_twin": reverse("api:entities") + (f"?{urlencode({'q': q})}" if q else ""),
    }
    return render_page(request, "memory/overview.html", "viewer-list", context)


def projection_context(request: HttpRequest) -> dict[str, Any]:
    """The overview's leak counts and projection panel (also re-rendered after an action)."""
    counts = leak_reads.leak_counts()
    seen = {k for per_kind in counts.values() for k in per_kind}
    known = leak_reads.leak_kinds()
    kinds = [k for k in known if k in seen] + sorted(seen - set(known))
    return {
        "leak_kinds": kinds,
        "leak_rows": [
            (viewer_id, [per_kind.get(k, 0) for k in kinds], sum(per_kind.values()))
            for viewer_id, per_kind in counts.items()
        ],
        "status": projection_reads.projection_status(),
        "projection_result": None,
        "can_run": request.user.has_perm(EDIT_PERMISSION),
    }


@require_GET
@login_required
def pick_viewer(request: HttpRequest) -> HttpResponse:
    """The header picker's no-JS path: a GET form that lands on the chosen viewer."""
    viewer_id = query_text(request, "viewer")
    if not viewer_id:
        return redirect("memory:overview")
    viewer = get_viewer_for_user(request, viewer_id)
    return redirect("memory:viewer", viewer_id=viewer.id)
