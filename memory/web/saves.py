"""The save a request is about: named in its URL (`/saves/<save>/…`, `/api/saves/{save}/…`),
looked up once, active for the whole view (and for a streamed body), and the one every link
the view builds carries.

Two saves of one scenario hold the same ids, so a URL without its save could mean either;
every save-scoped page and operation lives under its save's name. `in_save` wraps a page
view, `in_save_operation` an API operation (after authentication, so an anonymous caller
learns nothing about which saves exist). `reverse` is Django's, with the active save filled in.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from functools import wraps
from typing import Annotated, Any

from django.contrib.auth.views import redirect_to_login
from django.http import HttpRequest, HttpResponse
from django.urls import reverse as django_reverse
from ninja import Path

from memory.active_save import current_save, use
from memory.engine.saves import find_save, get_save
from memory.models import Save

# The path parameter every operation under /api/saves/{save}/ declares: ninja reads path
# parameters from the operation's own route only, so the router prefix's must be marked.
SaveName = Annotated[str, Path(description="The save's name (GET /api/saves lists them).")]


def current() -> Save:
    """The request's save: the active one, which in_save activated from the URL."""
    return current_save()


def reverse(viewname: str, args: Iterable[Any] | None = None, kwargs: dict | None = None) -> str:
    """Django's reverse for a save-scoped URL name, the request's save filled in."""
    name = current().name
    if kwargs:
        return django_reverse(viewname, kwargs={"save": name, **kwargs})
    return django_reverse(viewname, args=[name, *(args or [])])


def _each_chunk_within(save: Save, chunks: Iterable) -> Iterator:
    """A streamed body is produced after the view returned (and, under ASGI, maybe in another
    thread): each chunk is made inside the save, activated around that one step only."""
    iterator = iter(chunks)
    while True:
        with use(save):
            try:
                chunk = next(iterator)
            except StopIteration:
                return
        yield chunk


def in_save(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """A page view under `/saves/<save>/`: the save looked up (an unknown name is the styled
    404 listing the saves, via ErrorShapeMiddleware), active while the view runs and while a
    streamed body is produced, and set as `request.save` for templates."""

    @wraps(view)
    def within(request: HttpRequest, *args: Any, save: str, **kwargs: Any) -> HttpResponse:
        if not request.user.is_authenticated:
            # Sign in first: which saves exist is not for an anonymous caller to learn.
            return redirect_to_login(request.get_full_path())
        found = get_save(save)
        request.save = found  # for the templates; the code reads the active save
        with use(found):
            response = view(request, *args, **kwargs)
        if getattr(response, "streaming", False):
            response.streaming_content = _each_chunk_within(found, response.streaming_content)
        return response

    within.bound_by = in_save  # tests/test_save_scope.py finds it on every route under a save
    return within


def in_save_run(run: Callable[..., Any]) -> Callable[..., Any]:
    """An API route under `/api/saves/{save}/` (a router decorator in "view" mode, around
    ninja's whole run: checks, operation, and the serialising of its result, which may still
    read rows). A save found is active throughout; an unknown one is refused by
    `in_save_operation`, after authentication, so an anonymous caller gets its 401 and
    learns nothing of which saves exist."""

    @wraps(run)
    def within(request: HttpRequest, *args: Any, **kwargs: Any) -> Any:
        name = kwargs.get("save")
        found = find_save(name) if isinstance(name, str) else None
        if found is None:
            return run(request, *args, **kwargs)
        request.save = found
        with use(found):
            return run(request, *args, **kwargs)

    within.bound_by = in_save_run
    return within


def in_save_operation(operation: Callable[..., Any]) -> Callable[..., Any]:
    """The operation itself (a router decorator in "operation" mode: after authentication and
    validation). Operations declare `save: str` so the OpenAPI document names the path
    parameter; a save `in_save_run` did not find is NotFound, the error shape listing the saves."""

    @wraps(operation)
    def within(request: HttpRequest, *args: Any, save: str, **kwargs: Any) -> Any:
        if getattr(request, "save", None) is None:
            get_save(save)  # raises NotFound naming the saves there are
        return operation(request, *args, save=save, **kwargs)

    within.bound_by = in_save_operation
    return within


__all__ = ["SaveName", "current", "in_save", "in_save_operation", "in_save_run", "reverse"]
