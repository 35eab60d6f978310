"""The overview's projection buttons (editors): run one cycle, or verify a rebuild."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required, permission_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_POST

from memory import services
from memory.roles import EDIT_PERMISSION
from memory.web import saves
from memory.web.views._common import render_page, wants_fragment
from memory.web.views.overview import projection_context


@require_POST
@login_required
@permission_required(EDIT_PERMISSION, raise_exception=True)
def projection_action(request: HttpRequest, action: str) -> HttpResponse:
    """Run one projection cycle or verify that a rebuild would yield the stored rows."""
    if action == "cycle":
        result = services.run_cycle(user=request.user)
        text = (
            f"Cycle done: {result['rows_folded']} rows folded, {result['sessions_written']} "
            f"sessions written, {result['rows_visited']} rows visited."
        )
    elif action == "verify":
        result = services.verify_projections()
        text = (
            f"Verify: {result['identical']} of {result['sessions']} sessions identical to a rebuild"
            + (f", {len(result['drift'])} drifted." if result["drift"] else ".")
        )
    else:
        raise Http404("no such projection action")
    if not wants_fragment(request):
        (messages.success if action == "cycle" or not result["drift"] else messages.warning)(
            request, text
        )
        return redirect(saves.reverse("memory:save"))
    context = projection_context(request)
    context["projection_result"] = {"action": action, "text": text, "result": result}
    return render_page(request, "memory/save.html", "projection-panel", context)
