"""What every page family shares: the viewer lookup that checks the user may read, and the
render that answers an htmx request with the fragment only."""

from __future__ import annotations

from django.core.exceptions import BadRequest, PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.cache import patch_vary_headers

from memory import inputs
from memory.engine.errors import Forbidden, InvalidInput, NotFound
from memory.engine.knowledge import Viewer
from memory.web import auth


def get_viewer_for_user(request: HttpRequest, viewer_id: str) -> Viewer:
    """The viewer named in the URL: 403 unless the user may read, 404 if it does not exist."""
    try:
        return auth.get_viewer_for_user(request.user, inputs.path_id(viewer_id, "viewer_id"))
    except NotFound as exc:
        raise Http404(str(exc)) from None
    except Forbidden as exc:
        raise PermissionDenied(str(exc)) from None


def wants_fragment(request: HttpRequest) -> bool:
    htmx = getattr(request, "htmx", None)
    return bool(htmx) and not htmx.history_restore_request


def render_page(
    request: HttpRequest, template: str, partial: str | None, context: dict, status: int = 200
) -> HttpResponse:
    name = f"{template}#{partial}" if partial and wants_fragment(request) else template
    response = render(request, name, context, status=status)
    # A fragment and a page share one URL: caches (and the back button) must tell them apart.
    patch_vary_headers(response, ("HX-Request", "HX-History-Restore-Request"))
    return response


def path_id(value: str, field: str) -> str:
    """Another id from the URL path: one no store can hold is a 404."""
    try:
        return inputs.path_id(value, field)
    except NotFound as exc:
        raise Http404(str(exc)) from None


def query_text(request: HttpRequest, name: str) -> str | None:
    """The query parameter `name`, stripped; None when empty, 400 when no store could hold it."""
    try:
        value = (inputs.text(request.GET.get(name), name) or "").strip()
    except InvalidInput as exc:
        raise BadRequest(str(exc)) from None
    return value or None
