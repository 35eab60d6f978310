"""The inspector's pages. Each view: parse input -> call a selector/service -> render.

One template per page; every swappable region is an inline partial whose name is its DOM id.
With `HX-Request: true` (and not a history restore) a panel URL answers with its fragment only.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.cache import patch_vary_headers
from django.utils.functional import SimpleLazyObject
from django.views.decorators.http import require_GET, require_POST

from memory.engine.cursor import BadCursor
from memory.engine.errors import NotFound
from memory.engine.knowledge import Viewer, get_viewer, world_knowledge
from memory.web import selectors, services
from memory.web.services import can_edit

BUFFER_TYPES = ("dialogue", "action", "monologue", "thought")
MATRIX_MAX_ENTITIES = 60


# --- small helpers ----------------------------------------------------------------------------


def _get_viewer_for_user(request: HttpRequest, viewer_id: str) -> Viewer:
    try:
        return get_viewer(viewer_id)
    except NotFound as exc:
        raise Http404(str(exc)) from None


def _wants_fragment(request: HttpRequest) -> bool:
    htmx = getattr(request, "htmx", None)
    return bool(htmx) and not htmx.history_restore_request


def _render(
    request: HttpRequest, template: str, partial: str | None, context: dict, status: int = 200
):
    name = f"{template}#{partial}" if partial and _wants_fragment(request) else template
    response = render(request, name, context, status=status)
    # A fragment and a page share one URL: caches (and the back button) must tell them apart.
    patch_vary_headers(response, ("HX-Request", "HX-History-Restore-Request"))
    return response


def _clean(value: str | None) -> str | None:
    value = (value or "").strip()
    return value or None


# --- overview -----------------------------------------------------------------------------------


@require_GET
@login_required
def overview(request: HttpRequest) -> HttpResponse:
    q = _clean(request.GET.get("q"))
    viewers = selectors.list_viewers(q=q)
    worlds = []
    for world in selectors.list_worlds():
        entities, matrix = selectors.knowledge_matrix(world.id)
        too_big = len(entities) > MATRIX_MAX_ENTITIES
        rows = []
        if not too_big:
            for viewer_obj in entities:
                cells = [(target, matrix[viewer_obj.id].get(target.id)) for target in entities]
                rows.append((viewer_obj, cells))
        worlds.append({"world": world, "entities": entities, "rows": rows, "too_big": too_big})
    context = {
        **_projection_context(request),
        "q": q or "",
        "viewers": viewers,
        "worlds": worlds,
        "json_twin": reverse("api:entities") + (f"?{urlencode({'q': q})}" if q else ""),
    }
    return _render(request, "memory/overview.html", "viewer-list", context)


def _projection_context(request: HttpRequest) -> dict[str, Any]:
    context: dict[str, Any] = {
        "leak_kinds": [],
        "leak_rows": [],
        "status": None,
        "projection_result": None,
        "can_run": can_edit(request.user),
    }
    counts = selectors.leak_counts()
    seen = {k for per_kind in counts.values() for k in per_kind}
    kinds = [k for k in selectors.leak_kinds() if k in seen] + sorted(
        seen - set(selectors.leak_kinds())
    )
    context["leak_kinds"] = kinds
    context["leak_rows"] = [
        (viewer_id, [per_kind.get(k, 0) for k in kinds], sum(per_kind.values()))
        for viewer_id, per_kind in counts.items()
    ]
    context["status"] = selectors.projection_status()
    return context


@require_GET
@login_required
def pick_viewer(request: HttpRequest) -> HttpResponse:
    """The header picker's no-JS path: a GET form that lands on the chosen viewer."""
    viewer_id = _clean(request.GET.get("viewer"))
    if not viewer_id:
        return redirect("memory:overview")
    viewer = _get_viewer_for_user(request, viewer_id)
    return redirect("memory:viewer", viewer_id=viewer.id)


# --- the viewer page and its panels ---------------------------------------------------------


@dataclass
class BufferState:
    before: str | None
    after: str | None
    types: tuple[str, ...]
    q: str | None
    qa: bool

    @classmethod
    def from_request(cls, request: HttpRequest) -> BufferState:
        types = tuple(t for t in request.GET.getlist("type") if t in BUFFER_TYPES)
        return cls(
            before=_clean(request.GET.get("before")),
            after=_clean(request.GET.get("after")),
            types=types,
            q=_clean(request.GET.get("q")),
            qa=request.GET.get("qa") == "1",
        )

    def query(self, **overrides: Any) -> str:
        values = {
            "before": self.before,
            "after": self.after,
            "q": self.q,
            "qa": "1" if self.qa else None,
        }
        values.update(overrides)
        pairs = [("type", t) for t in self.types]
        pairs += [(k, v) for k, v in values.items() if v]
        return urlencode(pairs)


def _buffer_context(viewer: Viewer, state: BufferState) -> dict[str, Any]:
    base = reverse("memory:buffer_panel", args=[viewer.id])
    error = None
    try:
        page = selectors.buffer_page(
            viewer,
            before=state.before,
            after=state.after,
            types=frozenset(state.types) or None,
            q=state.q,
        )
    except BadCursor as exc:
        error = str(exc)
        page = selectors.buffer_page(viewer, types=frozenset(state.types) or None, q=state.q)

    def url(**overrides: Any) -> str:
        qs = state.query(**overrides)
        return f"{base}?{qs}" if qs else base

    return {
        "page": page,
        "state": state,
        "error": error,
        "types": BUFFER_TYPES,
        "self_url": url(),
        "older_url": url(before=page.older, after=None) if page.older else None,
        "newer_url": url(after=page.newer, before=None) if page.newer else None,
        "qa_url": url(qa=None if state.qa else "1"),
        "json_url": reverse("api:buffer", args=[viewer.id])
        + (f"?{state.query(qa=None)}" if state.query(qa=None) else ""),
    }


ALIASES_SHOWN = 100


def _aliases_context(
    viewer: Viewer,
    errors: dict[str, list[str]] | None = None,
    warnings=None,
    show_all: bool = False,
) -> dict:
    """Every alias row; past ALIASES_SHOWN targets only the labelled ones and any the edit just
    touched, unless ?all_aliases=1 (a crowd of strangers would make the page megabytes)."""
    errors, warnings = errors or {}, warnings or {}
    knowledge = world_knowledge(viewer.obj.world_id)
    targets = selectors.alias_targets(viewer, knowledge)
    if not show_all and len(targets) > ALIASES_SHOWN:
        # Picked by label alone, before any row is built: the hidden ones cost nothing.
        keep = [t for t in targets if t in viewer.aliases or t in errors or t in warnings]
        picked = set(keep)
        strangers = [t for t in targets if t not in picked]
        picked |= set(strangers[: max(ALIASES_SHOWN - len(keep), 0)])
        visible = [t for t in targets if t in picked]
    else:
        visible = targets
    rows = [
        {"row": r, "errors": errors.get(r.target_id, []), "warnings": warnings.get(r.target_id, [])}
        for r in selectors.alias_rows(viewer, knowledge, targets=visible)
    ]
    shown = {item["row"].target_id for item in rows}
    return {
        "rows": rows,
        "hidden": len(targets) - len(rows),
        "all_url": reverse("memory:aliases_panel", args=[viewer.id]) + "?all_aliases=1",
        "other_errors": [(t, errs) for t, errs in errors.items() if t not in shown],
        "history": selectors.alias_history(viewer.id),
        "errors": errors or {},
        "warnings": warnings or {},
        "aliases_error": viewer.aliases_error,
    }


def _sessions_context(viewer: Viewer) -> dict[str, Any]:
    panel = selectors.sessions_panel(viewer.id)
    sessions, digest, episodes = panel.sessions, panel.digest, panel.episodes
    items = [(s, panel.summaries.get(s.session_key)) for s in sessions.items]
    return {
        "sessions": items,
        "digest": digest,
        "episodes": episodes.items,
        "timeline": _timeline(episodes.items),
    }


def _timeline(episodes: list) -> list[dict[str, Any]]:
    """Episodes as bars on one row, oldest left: x/width in percent of the SVG's width."""
    if not episodes:
        return []
    ordered = sorted(episodes, key=lambda e: e.ordinal)
    total = sum(max(e.member_count, 1) for e in ordered)
    x = 0.0
    bars = []
    for e in ordered:
        width = 100.0 * max(e.member_count, 1) / total
        bars.append({"episode": e, "x": f"{x:.2f}", "width": f"{max(width - 0.4, 0.3):.2f}"})
        x += width
    return bars


def _faces_context(request: HttpRequest, viewer: Viewer) -> dict[str, Any]:
    include = request.GET.get("include_shadowed") == "1"
    base = reverse("memory:faces_panel", args=[viewer.id])
    toggle = base if include else f"{base}?include_shadowed=1"
    context: dict[str, Any] = {
        "include_shadowed": include,
        "toggle_url": toggle,
        "json_url": reverse("api:faces", args=[viewer.id])
        + ("?include_shadowed=true" if include else ""),
    }
    context["view"] = selectors.faces_view(viewer.id, include_shadowed=include)
    return context


VIEWERS_SHOWN = 50


def _viewer_switch(viewer: Viewer) -> dict[str, Any]:
    """The switcher's window: at most VIEWERS_SHOWN ids of the viewer's world around the
    current one (a list of 1,000 links is neither quick to render nor usable); the rest are
    one search away (the header's "Find a viewer", the overview)."""
    ids = selectors.viewer_ids(viewer.obj.world_id)
    if len(ids) <= VIEWERS_SHOWN:
        return {"ids": ids, "hidden": 0, "total": len(ids)}
    at = ids.index(viewer.id) if viewer.id in ids else 0
    start = max(0, min(at - VIEWERS_SHOWN // 2, len(ids) - VIEWERS_SHOWN))
    return {
        "ids": ids[start : start + VIEWERS_SHOWN],
        "hidden": len(ids) - VIEWERS_SHOWN,
        "total": len(ids),
    }


def _viewer_context(request: HttpRequest, viewer: Viewer, **aliases_extra: Any) -> dict[str, Any]:
    state = BufferState.from_request(request)
    # Lazy: a panel fragment reads only its own panel, so it pays only for that panel.
    return {
        "viewer": viewer,
        "viewers": SimpleLazyObject(lambda: _viewer_switch(viewer)),
        "aliases": SimpleLazyObject(
            lambda: _aliases_context(
                viewer, show_all=request.GET.get("all_aliases") == "1", **aliases_extra
            )
        ),
        "buffer": SimpleLazyObject(lambda: _buffer_context(viewer, state)),
        "sessions": SimpleLazyObject(lambda: _sessions_context(viewer)),
        "faces": SimpleLazyObject(lambda: _faces_context(request, viewer)),
        "can_edit": can_edit(request.user),
        "json_twin": reverse("api:buffer", args=[viewer.id]),
    }


@require_GET
@login_required
def viewer_page(request: HttpRequest, viewer_id: str) -> HttpResponse:
    viewer = _get_viewer_for_user(request, viewer_id)
    return _render(request, "memory/viewer.html", "viewer-panels", _viewer_context(request, viewer))


def _panel_view(partial: str, twin: str):
    @require_GET
    @login_required
    def view(request: HttpRequest, viewer_id: str) -> HttpResponse:
        viewer = _get_viewer_for_user(request, viewer_id)
        context = _viewer_context(request, viewer)
        context["json_twin"] = reverse(twin, args=[viewer.id])
        return _render(request, "memory/viewer.html", partial, context)

    view.__name__ = partial.replace("-", "_")
    return view


aliases_panel = _panel_view("aliases-panel", "api:aliases")
buffer_panel = _panel_view("buffer-panel", "api:buffer")
sessions_panel = _panel_view("sessions-panel", "api:sessions")
faces_panel = _panel_view("faces-panel", "api:faces")


@require_POST
@login_required
def alias_edit(request: HttpRequest, viewer_id: str, target_id: str) -> HttpResponse:
    """Set or delete one alias (staff). Errors come back inline, in the aliases panel."""
    if not can_edit(request.user):
        raise PermissionDenied("only staff may edit aliases")
    viewer = _get_viewer_for_user(request, viewer_id)
    errors: dict[str, list[str]] = {}
    warnings: dict[str, list[str]] = {}
    try:
        if request.POST.get("action") == "delete":
            services.delete_alias(viewer.id, target_id, user=request.user, source="inspector")
        else:
            result = services.set_alias(
                viewer.id,
                target_id,
                request.POST.get("label", ""),
                user=request.user,
                source="inspector",
            )
            if result.warnings:
                warnings[target_id] = result.warnings
    except services.AliasRefused as exc:
        errors[target_id] = exc.errors
    except services.ViewerMissing as exc:
        raise Http404(str(exc)) from None
    if not _wants_fragment(request) and not errors:
        return HttpResponseRedirect(reverse("memory:aliases_panel", args=[viewer.id]))
    viewer = get_viewer(viewer.id)  # re-read: the labels just changed
    context = _viewer_context(request, viewer, errors=errors, warnings=warnings)
    status = 400 if errors and not _wants_fragment(request) else 200
    response = _render(request, "memory/viewer.html", "aliases-panel", context, status=status)
    if not errors:
        # The buffer panel listens for this and re-reads itself with its own state.
        response.headers["HX-Trigger"] = "aliases-changed"
    return response


@require_GET
@login_required
def entry_page(request: HttpRequest, viewer_id: str, entry_id: str) -> HttpResponse:
    """A buffer row, else a long-term entry, as the viewer reads it, with its notes."""
    viewer = _get_viewer_for_user(request, viewer_id)
    context: dict[str, Any] = {
        "viewer": viewer,
        "entry": None,
        "longterm": None,
        "json_twin": reverse("api:entry", args=[viewer.id, entry_id]),
    }
    try:
        context["entry"] = selectors.get_entry(viewer, entry_id)
        return _render(request, "memory/entry.html", None, context)
    except NotFound:
        pass
    try:
        context["longterm"] = selectors.long_term_entry(viewer.id, entry_id)
    except NotFound as exc:
        raise Http404(str(exc)) from None
    context["json_twin"] = reverse("api:long_term_entry", args=[viewer.id, entry_id])
    return _render(request, "memory/entry.html", None, context)


# --- prompt context and leaks ---------------------------------------------------------------


@require_GET
@login_required
def prompt_page(request: HttpRequest, viewer_id: str) -> HttpResponse:
    viewer = _get_viewer_for_user(request, viewer_id)
    context: dict[str, Any] = {
        "viewer": viewer,
        "json_twin": reverse("api:prompt", args=[viewer.id]),
    }
    context["prompt"] = selectors.prompt_view(viewer)
    return _render(request, "memory/prompt.html", "prompt-panel", context)


LEAK_FORMATS = ("html", "csv", "json")


@require_GET
@login_required
def leaks_page(request: HttpRequest, fmt: str | None = None) -> HttpResponse:
    """Every finding of every viewer's prompt; ?viewer= and ?kind= filter, ?format= exports."""
    fmt = fmt or request.GET.get("format") or "html"
    if fmt not in LEAK_FORMATS:
        return HttpResponse(
            f"format must be one of {', '.join(LEAK_FORMATS)}",
            status=400,
            content_type="text/plain",
        )
    viewer_id, kind = _clean(request.GET.get("viewer")), _clean(request.GET.get("kind"))
    findings = selectors.leak_findings(viewer_id=viewer_id, kind=kind)
    if fmt == "json":
        return JsonResponse({"items": findings, "count": len(findings)})
    if fmt == "csv":
        response = HttpResponse(content_type="text/csv; charset=utf-8")
        response["Content-Disposition"] = 'attachment; filename="leaks.csv"'
        writer = csv.DictWriter(response, fieldnames=selectors.LEAK_FIELDS, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(findings)
        return response
    filters = [(k, v) for k, v in (("viewer", viewer_id), ("kind", kind)) if v]
    query = urlencode(filters)
    base = reverse("memory:leaks")
    kinds = list(selectors.leak_kinds())
    context = {
        "findings": findings,
        "viewer_filter": viewer_id or "",
        "kind_filter": kind or "",
        "kinds": kinds,
        "viewers": selectors.list_viewers(),
        "csv_url": f"{base}?{urlencode([('format', 'csv'), *filters])}",
        "json_url": f"{base}?{urlencode([('format', 'json'), *filters])}",
        "json_twin": reverse("api:leaks") + (f"?{query}" if query else ""),
    }
    return _render(request, "memory/leaks.html", "leak-table", context)


# --- projection doors (staff) ---------------------------------------------------------------


@require_POST
@login_required
def projection_action(request: HttpRequest, action: str) -> HttpResponse:
    """Run one projection cycle or verify that a rebuild would yield the stored rows."""
    if not can_edit(request.user):
        raise PermissionDenied("only staff may run projections")
    if action == "cycle":
        result = services.run_cycle()
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
    if not _wants_fragment(request):
        (messages.success if action == "cycle" or not result["drift"] else messages.warning)(
            request, text
        )
        return redirect("memory:overview")
    context = _projection_context(request)
    context["projection_result"] = {"action": action, "text": text, "result": result}
    return _render(request, "memory/overview.html", "projection-panel", context)
