"""The aliases panel (one URL: the whole page, or to htmx the panel alone) and the inline
alias edit: set, forget, restore from history or take the suggestion (editors)."""

from __future__ import annotations

from urllib.parse import urlencode

from django.contrib.auth.decorators import login_required, permission_required
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.views.decorators.http import require_POST

from memory import services
from memory.engine.errors import NotFound
from memory.engine.knowledge import Viewer, get_viewer
from memory.roles import EDIT_PERMISSION
from memory.selectors import aliases as alias_reads
from memory.web.saves import reverse
from memory.web.views._common import (
    get_viewer_for_user,
    offset_of,
    path_id,
    render_page,
    wants_fragment,
)
from memory.web.views.alias_panel import ALIASES_FROM
from memory.web.views.viewer_panels import panel_view, viewer_context

aliases_panel = panel_view("aliases-panel", "api:aliases")


ALIAS_SOURCE = "inspector"


def _alias_write(request: HttpRequest, viewer: Viewer, target_id: str) -> services.AliasResult:
    """The write a Save, Forget, "use suggestion" or history undo asks for."""
    action = request.POST.get("action", "set")
    user = request.user
    if action == "delete":
        return services.delete_alias(viewer.id, target_id, user=user, source=ALIAS_SOURCE)
    if action == "restore":
        try:
            change_id = int(request.POST.get("change", ""))
        except ValueError:
            raise services.AliasRefused({"change": ["no history entry named to undo"]}) from None
        return services.restore_alias(viewer.id, change_id, user=user, source="inspector undo")
    if action == "suggest":
        # The suggestion is derived again here, from what the viewer can see now: the one the
        # page showed may be stale, and a posted label would let any text pass as "suggested".
        rows = alias_reads.alias_rows(viewer, targets=[target_id])
        label = rows[0].suggestion if rows else ""
        return services.set_alias(viewer.id, target_id, label, user=user, source=ALIAS_SOURCE)
    label = request.POST.get("label", "")
    return services.set_alias(viewer.id, target_id, label, user=user, source=ALIAS_SOURCE)


@require_POST
@login_required
@permission_required(EDIT_PERMISSION, raise_exception=True)
def alias_edit(request: HttpRequest, viewer_id: str, target_id: str) -> HttpResponse:
    """Set, forget, restore from history or take the suggestion for one alias (editors).
    Errors come back inline, in the aliases panel, with the refused label kept in its input."""
    viewer = get_viewer_for_user(request, viewer_id)
    target_id = path_id(target_id, "target_id")
    errors: dict[str, list[str]] = {}
    warnings: dict[str, list[str]] = {}
    rejected: dict[str, str] = {}
    try:
        result = _alias_write(request, viewer, target_id)
        if result.warnings:
            warnings[target_id] = result.warnings
    except services.AliasRefused as exc:
        errors[target_id] = exc.errors
        if request.POST.get("action", "set") == "set":
            rejected[target_id] = request.POST.get("label", "")
    except NotFound as exc:  # the viewer went between the read above, or no such change
        raise Http404(str(exc)) from None
    if not wants_fragment(request) and not errors:
        # Back to the page of labels the edit was made on (its action URL carries it).
        page = offset_of(request, ALIASES_FROM)
        query = f"?{urlencode({ALIASES_FROM: page})}" if page else ""
        return HttpResponseRedirect(reverse("memory:aliases_panel", args=[viewer.id]) + query)
    viewer = get_viewer(viewer.id)  # re-read: the labels just changed
    context = viewer_context(
        request,
        viewer,
        errors=errors,
        warnings=warnings,
        rejected=rejected,
        touched=(target_id,),
    )
    status = 400 if errors and not wants_fragment(request) else 200
    response = render_page(request, "memory/viewer.html", "aliases-panel", context, status=status)
    if not errors:
        # The buffer panel listens for this and re-reads itself with its own state.
        response.headers["HX-Trigger"] = "aliases-changed"
    return response
