"""One entry as the viewer reads it: a buffer row, else a long-term entry with its notes."""

from __future__ import annotations

import json
from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.views.decorators.http import require_GET

from memory.engine.errors import NotFound
from memory.engine.knowledge import Viewer, true_names
from memory.models import ObjectType, WorldObject
from memory.selectors import entries as entry_reads
from memory.selectors import events as event_reads
from memory.selectors import faces as face_reads
from memory.web.saves import reverse
from memory.web.views._common import get_viewer_for_user, path_id, render_page


def _pretty(raw: str | None) -> str | None:
    """Stored JSON indented for reading; text that is not JSON is shown as it is."""
    if raw is None:
        return None
    try:
        return json.dumps(json.loads(raw), indent=2, ensure_ascii=False)
    except ValueError:
        return raw


def _people(viewer: Viewer, ids: list[str]) -> dict[str, dict[str, Any]]:
    """Each id as a person reads it: the true name (the id when it has none), what the
    viewer calls them, and whether it is an entity with a page of its own. Two queries."""
    wanted = sorted({i for i in ids if i})
    names = true_names(wanted)
    entities = set(
        WorldObject.objects.filter(id__in=wanted, type=ObjectType.ENTITY).values_list(
            "id", flat=True
        )
    )
    return {
        i: {
            "id": i,
            "name": names.get(i, i),
            "named": i in names,
            "label": viewer.aliases.get(i) if i != viewer.id else None,
            "url": reverse("memory:viewer", args=[i]) if i in entities else None,
        }
        for i in wanted
    }


@require_GET
@login_required
def entry_page(request: HttpRequest, viewer_id: str, entry_id: str) -> HttpResponse:
    """A buffer row, else a long-term entry, as the viewer reads it, with its notes."""
    viewer = get_viewer_for_user(request, viewer_id)
    entry_id = path_id(entry_id, "entry_id")
    context: dict[str, Any] = {
        "viewer": viewer,
        "entry": None,
        "longterm": None,
        "json_twin": reverse("api:entry", args=[viewer.id, entry_id]),
    }
    try:
        entry = entry_reads.get_entry(viewer, entry_id)
    except NotFound:
        entry = None
    if entry is not None:
        people = _people(
            viewer, [viewer.id, entry.actor_id or "", *entry.target_ids, entry.location_id or ""]
        )
        context.update(
            entry=entry,
            owner=people[viewer.id],
            actor=people.get(entry.actor_id or ""),
            targets=[people[t] for t in entry.target_ids if t in people],
            location=people.get(entry.location_id or ""),
            moment=event_reads.buffer_events(viewer, [entry])[entry.id],
            intent_pretty=_pretty(entry.intent_json),
            outcome_pretty=_pretty(entry.outcome_json),
            rollup_title=face_reads.entry_titles([entry.abstracted_into]).get(
                entry.abstracted_into or "", entry.abstracted_into
            )
            if entry.abstracted_into
            else None,
        )
        return render_page(request, "memory/entry.html", None, context)
    try:
        context["longterm"] = face_reads.long_term_entry(viewer.id, entry_id)
    except NotFound as exc:
        raise Http404(str(exc)) from None
    context["owner"] = _people(viewer, [viewer.id])[viewer.id]
    context["json_twin"] = reverse("api:long_term_entry", args=[viewer.id, entry_id])
    return render_page(request, "memory/entry.html", None, context)
