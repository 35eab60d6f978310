"""A viewer's prompt context with its leaks highlighted, and the leak report of every viewer
(as a page, CSV or JSON)."""

from __future__ import annotations

import csv
from typing import Any
from urllib.parse import urlencode

from django.contrib.auth.decorators import login_required, permission_required
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.urls import reverse
from django.views.decorators.http import require_GET

from memory.engine.errors import NotFound
from memory.engine.leaks.world_scan import CSV_HEADER
from memory.web.roles import READ_PERMISSION
from memory.web.selectors import leaks as leak_reads
from memory.web.selectors import viewers as viewer_reads
from memory.web.spreadsheet import safe_row
from memory.web.views._common import get_viewer_for_user, query_text, render_page

LEAK_FORMATS = ("html", "csv", "json")


@require_GET
@login_required
def prompt_page(request: HttpRequest, viewer_id: str) -> HttpResponse:
    viewer = get_viewer_for_user(request, viewer_id)
    context: dict[str, Any] = {
        "viewer": viewer,
        "json_twin": reverse("api:prompt", args=[viewer.id]),
    }
    context["prompt"] = leak_reads.prompt_view(viewer)
    return render_page(request, "memory/prompt.html", "prompt-panel", context)


@require_GET
@login_required
@permission_required(READ_PERMISSION, raise_exception=True)
def leaks_page(request: HttpRequest, fmt: str | None = None) -> HttpResponse:
    """Every finding of every viewer's prompt; ?viewer= and ?kind= filter, ?format= exports."""
    fmt = fmt or request.GET.get("format") or "html"
    if fmt not in LEAK_FORMATS:
        return HttpResponse(
            f"format must be one of {', '.join(LEAK_FORMATS)}",
            status=400,
            content_type="text/plain",
        )
    viewer_id, kind = query_text(request, "viewer"), query_text(request, "kind")
    try:
        findings = leak_reads.leak_findings(viewer_id=viewer_id, kind=kind)
    except NotFound as exc:  # ?viewer= names nobody: a 404 in the format asked for
        if fmt == "json":
            body = {"detail": str(exc), "code": exc.code, "field": "viewer"}
            return JsonResponse(body, status=404)
        raise Http404(str(exc)) from None
    if fmt == "json":
        return JsonResponse({"items": findings, "count": len(findings)})
    if fmt == "csv":
        response = HttpResponse(content_type="text/csv; charset=utf-8")
        response["Content-Disposition"] = 'attachment; filename="leaks.csv"'
        writer = csv.writer(response)
        writer.writerow(CSV_HEADER)
        writer.writerows(safe_row(f.get(column) for column in CSV_HEADER) for f in findings)
        return response
    filters = [(k, v) for k, v in (("viewer", viewer_id), ("kind", kind)) if v]
    query = urlencode(filters)
    base = reverse("memory:leaks")
    context = {
        "findings": findings,
        "viewer_filter": viewer_id or "",
        "kind_filter": kind or "",
        "kinds": list(leak_reads.leak_kinds()),
        "viewers": viewer_reads.list_viewers(),
        "csv_url": f"{base}?{urlencode([('format', 'csv'), *filters])}",
        "json_url": f"{base}?{urlencode([('format', 'json'), *filters])}",
        "json_twin": reverse("api:leaks") + (f"?{query}" if query else ""),
    }
    return render_page(request, "memory/leaks.html", "leak-table", context)
