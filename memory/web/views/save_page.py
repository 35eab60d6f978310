"""One save's page: where it came from (provenance), its viewers, knowledge matrix, leak
counts, projection status and problems; and the admins' delete, behind a confirm page."""

from __future__ import annotations

from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required, permission_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods

from memory.engine import saves as engine_saves
from memory.roles import ADMIN_PERMISSION, READ_PERMISSION
from memory.selectors import labels as label_reads
from memory.selectors import leaks as leak_reads
from memory.selectors import saves as save_reads
from memory.selectors import viewers as viewer_reads
from memory.web import saves
from memory.web.views import save_markup
from memory.web.views._common import query_text, render_page, reverse_each, wants_fragment
from memory.web.views.overview import VIEWERS_LISTED, matrix, projection_context


@require_GET
@login_required
@permission_required(READ_PERMISSION, raise_exception=True)
def save_page(request: HttpRequest) -> HttpResponse:
    q = query_text(request, "q")
    # The leak counts, the flaws and the labels kept: one read of every entity, which also
    # counts the unfiltered list (a search reads it after: it may open its one entity).
    board = None if q else leak_reads.leak_board()
    entities, viewer_total = viewer_reads.viewer_window(
        q=q, limit=VIEWERS_LISTED, total=len(board.rows) if board else None
    )
    if q and viewer_total == 1 and not wants_fragment(request):
        # A search that finds one entity opens it (the live list, typed into, never jumps).
        return redirect(saves.reverse("memory:viewer", kwargs={"viewer_id": entities[0].id}))
    board = board or leak_reads.leak_board()
    save = saves.current()
    urls = reverse_each("memory:viewer", [], [e.id for e in entities])
    context = {
        **projection_context(request, board),
        "save": save,
        "provenance": save_reads.provenance(save),
        "q": q or "",
        # Each entity's <li>, its page's URL beside it (a reverse each was a tenth of the page).
        "viewers_html": save_markup.viewer_items((e, urls[e.id]) for e in entities if e.agent),
        # is_agent=0: things the save keeps as entities that never think (a crate, a door).
        "non_agents_html": save_markup.viewer_items(
            (e, urls[e.id]) for e in entities if not e.agent
        ),
        "viewer_total": viewer_total,
        "listed": len(entities),
        "worlds": [matrix(request, world, board) for world in viewer_reads.list_worlds()],
        "json_twin": saves.reverse("api:entities") + (f"?{urlencode({'q': q})}" if q else ""),
        "can_delete": request.user.has_perm(ADMIN_PERMISSION),
        "suspicious": _suspicious(board),
    }
    return render_page(request, "memory/save.html", "viewer-list", context)


SUSPICIOUS_LISTED = 20


def _suspicious(board) -> dict:
    """The save's suspicious labels, the first SUSPICIOUS_LISTED by viewer, each viewer and
    target by name."""
    found = label_reads.suspicious_labels(board)
    shown = found[:SUSPICIOUS_LISTED]
    names = viewer_reads.display_names([i for s in shown for i in (s.viewer_id, s.target_id)])
    urls = reverse_each("memory:aliases_panel", [], [s.viewer_id for s in shown])
    return {
        "total": len(found),
        "rows": [
            {
                "viewer_id": s.viewer_id,
                "url": urls[s.viewer_id],
                "viewer": names[s.viewer_id],
                "target": names[s.target_id],
                "label": s.label,
                "reasons": s.reasons,
            }
            for s in shown
        ],
    }


@require_http_methods(["GET", "POST"])
@login_required
@permission_required(ADMIN_PERMISSION, raise_exception=True)
def delete_save(request: HttpRequest) -> HttpResponse:
    """GET: the confirm page naming the save and what it holds; POST with confirm=<name>:
    the save and every row under it removed (audited), back to the overview."""
    save = saves.current()
    if request.method == "POST" and request.POST.get("confirm") == save.name:
        deleted = engine_saves.delete_save(save.name, actor=request.user)
        messages.success(request, f"Deleted save {deleted.name!r}: {deleted.total} rows removed.")
        return redirect("memory:overview")
    rows = save_reads.live_row_counts()
    context = {
        "save": save,
        "provenance": save_reads.provenance(save),
        "rows": rows,
        "row_total": sum(rows.values()),
        "mistyped": request.method == "POST",
    }
    return render(
        request, "memory/save_delete.html", context, status=400 if request.method == "POST" else 200
    )
