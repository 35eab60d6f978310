"""What every page family shares: the viewer lookup that checks the user may read, the
render that answers an htmx request with the fragment only, the query's offsets, and a URL per
id made with one reverse."""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import quote

from django.core.exceptions import BadRequest, PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.cache import patch_vary_headers
from django.utils.http import RFC3986_SUBDELIMS

from memory import inputs
from memory.engine.errors import Forbidden, InvalidInput, NotFound
from memory.engine.knowledge import Viewer
from memory.web import auth
from memory.web.converters import IdConverter
from memory.web.saves import reverse

_IDS = IdConverter()


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


def offset_of(request: HttpRequest, name: str) -> int:
    """A page offset from the query string: 0 unless a plain number of a sane size."""
    return inputs.whole_number(request.GET.get(name, ""), 8) or 0


def reverse_each(
    name: str, head: list[str], ids: list[str], reverse: Callable[..., str] = reverse
) -> dict[str, str]:
    """reverse(name, args=[*head, i]) for each id, as one reverse and a splice per id: the
    last argument is quoted the way reverse quotes an <oid:> segment (a reverse per row was a
    sixth of the aliases panel's rows). `reverse`: the request's save's (the default), or
    Django's for a page across saves, the save's name first in `head`."""
    marker = "\ue000"  # a private-use character no id needs; its quoted form appears once
    pattern = reverse(name, args=[*head, marker])
    before, sep, after = pattern.partition(quote(marker))
    if not sep:  # not an <oid:> last segment after all: reverse each, as before
        return {i: reverse(name, args=[*head, i]) for i in ids}
    return {
        i: f"{before}{quote(_IDS.to_url(i), safe=RFC3986_SUBDELIMS + '/~:@')}{after}"
        if i
        else reverse(name, args=[*head, i])
        for i in ids
    }
