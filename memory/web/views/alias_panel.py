"""The aliases panel's rows: a window of them (a viewer who knows hundreds of people is read
a page of labels at a time, the strangers a few), each row's values made once and its HTML
made by markup.alias_row."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django.utils.safestring import mark_safe
from django.utils.text import slugify

from memory.engine.aliases import NO_LABEL
from memory.engine.knowledge import Viewer
from memory.selectors import aliases as alias_reads
from memory.selectors import viewers as viewer_reads
from memory.web.saves import reverse
from memory.web.views import markup
from memory.web.views._common import reverse_each

ALIASES_SHOWN = 100
# Past ALIASES_SHOWN targets, the labelled ones come this many at a time (?aliases_from=N): a
# viewer who knows 300 people made a 0.8 MB panel that cost 60-80 ms of every viewer page.
LABELS_SHOWN = 25
ALIASES_FROM = "aliases_from"


# Strangers (targets the viewer has no label for) are alike: "unknown", "an unfamiliar figure",
# a descriptor to take. A few show what such a row is and let an editor name one at once; more
# would push the labels that matter (and the history) out of sight on a crowded world and make
# the page pay for rows nobody reads. The count and "Show all" say where the rest are.
STRANGERS_SHOWN = 10


def _alias_item(
    r: alias_reads.AliasRow,
    buffer_url: str,
    edit_url: str,
    *,
    can_edit: bool,
    errors: list[str],
    warnings: list[str],
    rejected: str | None,
    selected: bool,
    pair_url: str,
) -> dict[str, Any]:
    """One alias row with every value markup.alias_row prints made here, once (a hundred
    rows' slugify, {% url %} and nested lookups were most of the page in the template)."""
    dom = slugify(r.target_id)
    name = r.true_name or r.target_id
    return {
        "target": r.target_id,
        "name": name,
        "named": name != r.target_id,
        # Who the row is about, in words, for what a person reads (a screen reader's label,
        # the Forget question): the true name, else what the viewer can see of them.
        "person": r.true_name or r.suggestion or r.target_id,
        "in_world": r.in_world,
        "state": r.state,
        "label": r.label,
        # A blank label is what omnia prints; the panel marks it so the row is not blank.
        "shown_as": NO_LABEL if r.label is not None and not r.label.strip() else r.shown_as,
        "suspicions": r.suspicions,
        "suggestion": r.suggestion,
        # An editor gets one click to take the suggestion, unless it is already the label.
        "offer": can_edit and bool(r.suggestion) and r.suggestion != r.label,
        # A refused label stays in its input, beside the reason, to be corrected.
        "value": rejected if rejected is not None else (r.label or ""),
        "rejected": rejected,
        "errors": errors,
        "warnings": warnings,
        "dom": dom,
        "edit_url": edit_url,
        "uses_url": f"{buffer_url}?{urlencode({'uses': r.target_id})}",
        # Only an entity of the world is someone the viewer can share moments with.
        "pair_url": pair_url if r.in_world else "",
        "selected": selected,
    }


def aliases_context(
    viewer: Viewer,
    errors: dict[str, list[str]] | None = None,
    warnings=None,
    show_all: bool = False,
    selected: tuple[str, ...] = (),
    rejected: dict[str, str] | None = None,
    can_edit: bool = False,
    csrf_token: str = "",
    labels_from: int = 0,
    touched: tuple[str, ...] = (),
    viewer_name: str | None = None,  # the page's name for the viewer, when it has read it
) -> dict:
    """Every alias row; past ALIASES_SHOWN targets a page of LABELS_SHOWN labelled ones from
    `labels_from`, any the edit just touched or the selected line names, and (on the first
    page) the first STRANGERS_SHOWN strangers, unless ?all_aliases=1 (a crowd of strangers
    would make the page megabytes)."""
    errors, warnings, rejected = errors or {}, warnings or {}, rejected or {}
    # A selected line's targets stay too (the line lights up their rows), and the row an
    # edit just touched, wherever its label now sorts.
    window = alias_reads.alias_window(
        viewer,
        pinned=[*errors, *warnings, *selected, *touched],
        show_all=show_all,
        limit=ALIASES_SHOWN,
        strangers=STRANGERS_SHOWN,
        labels=LABELS_SHOWN,
        labels_from=labels_from,
    )
    panel_url = reverse("memory:aliases_panel", args=[viewer.id])
    # An edit answers with the panel at the page it was made on.
    here = f"?{urlencode({ALIASES_FROM: window.labels_from})}" if window.labels_from else ""
    buffer_url = reverse("memory:buffer_panel", args=[viewer.id])
    edit_urls = reverse_each("memory:alias_edit", [viewer.id], [r.target_id for r in window.rows])
    pair_urls = reverse_each("memory:pair", [viewer.id], [r.target_id for r in window.rows])
    rows = [
        _alias_item(
            r,
            buffer_url,
            edit_urls[r.target_id] + here,
            can_edit=can_edit,
            errors=errors.get(r.target_id, []),
            warnings=warnings.get(r.target_id, []),
            rejected=rejected.get(r.target_id),
            selected=r.target_id in selected,
            pair_url=pair_urls[r.target_id],
        )
        for r in window.rows
    ]
    csrf_input = markup.csrf_input(csrf_token) if can_edit else ""
    history = alias_reads.alias_history(viewer.id)
    # The viewer and every person the history names, in words, in one read.
    names = viewer_reads.display_names(
        [viewer.id, *(c.target_id for c in history)],
        known={viewer.id: viewer_name} if viewer_name is not None else None,
    )
    viewer_name = names[viewer.id]
    for item in rows:
        item["html"] = markup.alias_row(item, viewer_name, can_edit, csrf_input)
    # The rows as the template's loop laid them out, one piece (no loop over 35 rows).
    rows_html = mark_safe("".join(f"\n      {item['html']}\n    " for item in rows))
    shown = {item["target"] for item in rows}
    strangers_shown = sum(1 for r in window.rows if r.label is None)
    return {
        "rows": rows,
        "rows_html": rows_html,
        "hidden": window.total - window.labelled - strangers_shown,
        "labels": _labels_pager(window, panel_url),
        "all_url": panel_url + "?all_aliases=1",
        "here": here,
        "other_errors": [(t, errs) for t, errs in errors.items() if t not in shown],
        "history": [(c, names[c.target_id]) for c in history],
        "errors": errors,
        "warnings": warnings,
        "aliases_error": viewer.aliases_error,
        # What {% csrf_token %} prints, made once for the two forms of every row.
        "csrf_input": csrf_input,
    }


def _labels_pager(window: alias_reads.AliasWindow, panel_url: str) -> dict[str, Any] | None:
    """Which labels this page shows of how many, and the links to the pages beside it; None
    when every label is on it."""
    if window.labels_next is None and not window.labels_from:
        return None
    earlier = max(window.labels_from - LABELS_SHOWN, 0)

    def url(start: int) -> str:
        return f"{panel_url}?{urlencode({ALIASES_FROM: start})}" if start else panel_url

    return {
        "first": window.labels_from + 1,
        "last": min(window.labels_from + LABELS_SHOWN, window.labelled),
        "total": window.labelled,
        "prev_url": url(earlier) if window.labels_from else None,
        "next_url": url(window.labels_next) if window.labels_next is not None else None,
    }
