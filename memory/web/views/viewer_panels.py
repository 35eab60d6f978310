"""The viewer page's context, panel by panel (aliases, buffer, sessions, faces, the viewer
switcher): each read lazily, so a panel's fragment pays for its own panel alone. The views
are in viewer.py (the page and three panels) and aliases.py (the aliases panel and its edit);
the aliases panel's rows are made in alias_panel.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any
from urllib.parse import urlencode

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.middleware.csrf import get_token
from django.utils.functional import SimpleLazyObject
from django.utils.safestring import mark_safe
from django.utils.text import slugify
from django.views.decorators.http import require_GET

from memory.engine.cursor import BadCursor
from memory.engine.errors import NotFound
from memory.engine.knowledge import Viewer
from memory.roles import EDIT_PERMISSION
from memory.selectors import buffer as buffer_reads
from memory.selectors import entries as entry_reads
from memory.selectors import events as event_reads
from memory.selectors import faces as face_reads
from memory.selectors import projections as projection_reads
from memory.selectors import viewers as viewer_reads
from memory.web.context import world_years
from memory.web.saves import reverse
from memory.web.views import markup
from memory.web.views._common import (
    get_viewer_for_user,
    offset_of,
    query_text,
    render_page,
    reverse_each,
)
from memory.web.views.alias_panel import ALIASES_FROM, aliases_context

BUFFER_TYPES = ("dialogue", "action", "monologue", "thought")


@dataclass
class BufferState:
    before: str | None
    after: str | None
    types: tuple[str, ...]
    q: str | None
    qa: bool
    uses: str | None = None  # only the lines naming this entity (an alias row's "lines")
    line: str | None = None  # the selected line: its session, episode and aliases light up

    @classmethod
    def from_request(cls, request: HttpRequest) -> BufferState:
        types = tuple(t for t in request.GET.getlist("type") if t in BUFFER_TYPES)
        return cls(
            before=query_text(request, "before"),
            after=query_text(request, "after"),
            types=types,
            q=query_text(request, "q"),
            qa=request.GET.get("qa") == "1",
            uses=query_text(request, "uses"),
            line=query_text(request, "line"),
        )

    def query(self, **overrides: Any) -> str:
        values = {
            "before": self.before,
            "after": self.after,
            "q": self.q,
            "uses": self.uses,
            "qa": "1" if self.qa else None,
            "line": self.line,
        }
        values.update(overrides)
        pairs = [("type", t) for t in self.types]
        pairs += [(k, v) for k, v in values.items() if v]
        return urlencode(pairs)


def _who(names: dict[str, str], entity_id: str | None) -> dict[str, Any] | None:
    """An id as QA mode shows it: the true name, and the id itself when it differs."""
    if entity_id is None or not names:
        return None
    name = names.get(entity_id, entity_id)
    return {"id": entity_id, "name": name, "named": name != entity_id}


def _buffer_context(viewer: Viewer, state: BufferState, years: object) -> dict[str, Any]:
    """The buffer panel: a page of lines (each made whole in Python, markup.buffer_line),
    its filters and pager. `years`: the page's world_years (memory.web.context), read once
    the lines are made."""
    base = reverse("memory:buffer_panel", args=[viewer.id])
    error = None
    try:
        page = buffer_reads.buffer_page(
            viewer,
            before=state.before,
            after=state.after,
            types=frozenset(state.types) or None,
            q=state.q,
            uses=state.uses,
        )
    except BadCursor as exc:
        error = str(exc)
        page = buffer_reads.buffer_page(
            viewer, types=frozenset(state.types) or None, q=state.q, uses=state.uses
        )

    def url(**overrides: Any) -> str:
        qs = state.query(**overrides)
        return f"{base}?{qs}" if qs else base

    page_base = reverse("memory:viewer", args=[viewer.id])
    # Selecting a line is a permalink to the whole page with the same buffer state: the
    # server lights up its session, episode and aliases (no JS needed; htmx swaps it in).
    # The line's own parameter comes last (BufferState.query's order): the rest is made once.
    rest = state.query(line=None)
    # The page's witness counts in one statement; the event links with one reverse.
    refs = event_reads.buffer_events(viewer, page.entries)
    event_urls = reverse_each("memory:event", [], [r.event for r in refs.values()])
    # QA asked for ids: each beside its true name ("actor Gareth bob"), one query a page.
    named = (
        viewer_reads.display_names(
            i for e in page.entries for i in (e.actor_id, *e.target_ids) if i is not None
        )
        if state.qa
        else {}
    )
    lines = [
        {
            "e": e,
            "event_url": event_urls[refs[e.id].event],
            "witnesses": refs[e.id].witness_count,
            "select_url": f"{page_base}?{rest}{'&' if rest else ''}"
            f"{urlencode({'line': e.id})}#{dom}",
            "dom": dom,
            "selected": e.id == state.line,
            "actor": _who(named, e.actor_id),
            "targets": [_who(named, t) for t in e.target_ids] if state.qa else [],
        }
        for e in page.entries
        for dom in (f"line-{slugify(e.id)}",)
    ]
    if state.qa:
        entry_urls = reverse_each("memory:entry", [viewer.id], [e.id for e in page.entries])
        for item in lines:
            item["entry_url"] = entry_urls[item["e"].id]
    says_years = bool(years) if lines else False
    return {
        "lines": lines,
        "lines_html": [markup.buffer_line(i, years=says_years, qa=state.qa) for i in lines],
        "uses_name": viewer_reads.display_names([state.uses])[state.uses] if state.uses else None,
        "clear_uses_url": url(uses=None, before=None, after=None),
        "page": page,
        "state": state,
        "error": error,
        "types": BUFFER_TYPES,
        "self_url": url(),
        "older_url": url(before=page.older, after=None) if page.older else None,
        "newer_url": url(after=page.newer, before=None) if page.newer else None,
        "qa_url": url(qa=None if state.qa else "1"),
        "json_url": reverse("api:buffer", args=[viewer.id])
        + (f"?{twin_query}" if (twin_query := state.query(qa=None, line=None)) else ""),
    }


def _sessions_context(
    viewer: Viewer, links: entry_reads.LineLinks | None, qa: bool = False, years: object = False
) -> dict[str, Any]:
    """The sessions panel: the episodes, the digest and the sessions (each row made whole in
    Python, markup.session_row). `years`: the page's world_years (memory.web.context)."""
    panel = projection_reads.sessions_panel(viewer)
    selected_session = links.session_key if links else None
    selected_episode = panel.episode_at(links.entry.timestamp) if links else None
    items = [
        {
            "s": s,
            "summary": panel.summaries.get(s.session_key),
            "place": panel.places.get(s.session_key),
            "people": panel.people.get(s.session_key, []),
            "dom": f"session-{slugify(s.session_key)}",
            "selected": s.session_key == selected_session,
        }
        for s in panel.sessions_oldest_first
    ]
    episodes = panel.episodes_oldest_first
    years = bool(years)
    # The rows, the episodes and the timeline each made whole in Python, as one piece: a
    # template loop cost more than making its rows.
    return {
        "sessions": items,
        "rows_html": mark_safe("".join(markup.session_row(item, years, qa) for item in items)),
        "digest": panel.digest,
        "episodes_html": markup.episode_items(
            [{"e": e, "selected": e.ordinal == selected_episode} for e in episodes], years
        ),
        "timeline_html": markup.timeline_rects(_timeline(episodes, selected_episode), years),
        "qa": qa,  # the session keys shown beside the places (QA asked for ids)
    }


def _timeline(episodes: list, selected: int | None = None) -> list[dict[str, Any]]:
    """Episodes as bars on one row, oldest left: x/width in percent of the SVG's width."""
    if not episodes:
        return []
    ordered = sorted(episodes, key=lambda e: e.ordinal)
    total = sum(max(e.member_count, 1) for e in ordered)
    x = 0.0
    bars = []
    for e in ordered:
        width = 100.0 * max(e.member_count, 1) / total
        bars.append(
            {
                "episode": e,
                "x": f"{x:.2f}",
                "width": f"{max(width - 0.4, 0.3):.2f}",
                "selected": e.ordinal == selected,
            }
        )
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
    context["view"] = face_reads.faces_view(viewer, include_shadowed=include)
    return context


VIEWERS_SHOWN = 50


def _viewer_switch(viewer: Viewer, viewer_name: str | None = None) -> dict[str, Any]:
    """The switcher's window: at most VIEWERS_SHOWN ids of the viewer's world around the
    current one (a list of 1,000 links is neither quick to render nor usable); the rest are
    one search away (the header's "Find a viewer", the overview). Each link's URL and name
    are made here, once: fifty {% url %} tags were a tenth of the page."""
    shown, total = viewer_reads.viewer_window_ids(viewer, VIEWERS_SHOWN)
    names = viewer_reads.display_names(
        shown, known={viewer.id: viewer_name} if viewer_name is not None else None
    )
    urls = reverse_each("memory:viewer", [], shown)
    links = [
        {
            "id": i,
            "name": names[i],
            "named": names[i] != i,
            "url": urls[i],
            "current": i == viewer.id,
        }
        for i in shown
    ]
    return {
        "links": links,
        # Each link's <li>, as the template's loop laid them out (one piece: no loop).
        "html": mark_safe("".join(f"\n      {markup.switch_link(link)}\n      " for link in links)),
        "hidden": total - len(shown),
        "total": total,
    }


def _line_links(viewer: Viewer, state: BufferState) -> entry_reads.LineLinks | None:
    if not state.line:
        return None
    try:
        return entry_reads.line_links(viewer, state.line)
    except NotFound:
        return None  # a stale permalink: the page, with nothing selected


def viewer_context(
    request: HttpRequest, viewer: Viewer, focus: str | None = None, **aliases_extra: Any
) -> dict[str, Any]:
    state = BufferState.from_request(request)
    links = _line_links(viewer, state)

    @cache
    def viewer_name() -> str:  # a template calls it: read when printed (not by the buffer)
        return viewer_reads.display_names([viewer.id])[viewer.id]

    can_edit = request.user.has_perm(EDIT_PERMISSION)
    # Lazy: a panel fragment reads only its own panel, so it pays only for that panel.
    return {
        "viewer": viewer,
        "viewer_name": viewer_name,
        "focus": focus,
        "selected_line": links,
        "viewers": SimpleLazyObject(lambda: _viewer_switch(viewer, viewer_name())),
        "aliases": SimpleLazyObject(
            lambda: aliases_context(
                viewer,
                show_all=request.GET.get("all_aliases") == "1",
                labels_from=offset_of(request, ALIASES_FROM),
                selected=links.alias_targets if links else (),
                can_edit=can_edit,
                csrf_token=get_token(request) if can_edit else "",
                viewer_name=viewer_name(),
                **aliases_extra,
            )
        ),
        "buffer": SimpleLazyObject(lambda: _buffer_context(viewer, state, world_years(request))),
        "sessions": SimpleLazyObject(
            lambda: _sessions_context(viewer, links, state.qa, world_years(request))
        ),
        "faces": SimpleLazyObject(lambda: _faces_context(request, viewer)),
        "can_edit": can_edit,
        "json_twin": reverse("api:buffer", args=[viewer.id]),
    }


def panel_view(partial: str, twin: str):
    @require_GET
    @login_required
    def view(request: HttpRequest, viewer_id: str) -> HttpResponse:
        viewer = get_viewer_for_user(request, viewer_id)
        # The panel's own URL shows the whole page with that panel in focus (scrolled to,
        # highlighted, announced); to htmx it is the panel alone.
        # A panel re-reading itself (the buffer after an alias edit) takes no focus: the
        # person is still working where they were.
        refresh = request.headers.get("HX-Trigger") == partial
        context = viewer_context(
            request, viewer, focus=None if refresh else partial.removesuffix("-panel")
        )
        context["json_twin"] = reverse(twin, args=[viewer.id])
        return render_page(request, "memory/viewer.html", partial, context)

    view.__name__ = partial.replace("-", "_")
    return view
