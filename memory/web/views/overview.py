"""The overview (one section per save), and what a save's page shares with it: each world's
knowledge matrix window, the leak counts and projection panel, the header picker's no-JS path."""

from __future__ import annotations

import heapq
from typing import Any
from urllib.parse import quote, urlencode

from django.contrib.auth.decorators import login_required, permission_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.http import require_GET

from memory.active_save import use
from memory.roles import ADMIN_PERMISSION, EDIT_PERMISSION, READ_PERMISSION
from memory.selectors import leaks as leak_reads
from memory.selectors import matrix as matrix_reads
from memory.selectors import projections as projection_reads
from memory.selectors import saves as save_reads
from memory.selectors import viewers as viewer_reads
from memory.selectors.problems import problem_list
from memory.web import saves
from memory.web.views import leak_rows, save_markup
from memory.web.views._common import (
    get_viewer_for_user,
    offset_of,
    query_text,
    render_page,
    reverse_each,
)


@require_GET
@login_required
@permission_required(READ_PERMISSION, raise_exception=True)
def overview(request: HttpRequest) -> HttpResponse:
    """One section per save: its provenance, viewers, open leaks, projection lag, and links
    to its page and leak report. ?q= finds viewers in every save (one match opens it)."""
    q = query_text(request, "q")
    sections = []
    for summary in save_reads.summaries():
        found: list = []
        found_total = 0
        if q:
            with use(summary.save):
                found, found_total = viewer_reads.viewer_window(q=q, limit=VIEWERS_LISTED)
        sections.append({"s": summary, "found": found, "found_total": found_total})
    if q and sum(x["found_total"] for x in sections) == 1:
        only = next(x for x in sections if x["found_total"])
        return redirect("memory:viewer", save=only["s"].save.name, viewer_id=only["found"][0].id)
    context = {
        "q": q or "",
        "sections": sections,
        "can_delete": request.user.has_perm(ADMIN_PERMISSION),
        "json_twin": reverse("api:saves"),
    }
    return render_page(request, "memory/overview.html", None, context)


# The overview lists this many viewers (search narrows the rest) and this many leak rows.
VIEWERS_LISTED = 50
# The leak scanner's kinds as the save page's column heads say them.
LEAK_KIND_HEADS = {
    "system_id": "system ids",
    "unknown_name": "names not known",
    "private_attribute": "private values",
    "raw_tag": "raw tags",
    "unresolved_tag": "unresolved tags",
}
# Raw and unresolved tags in omnia's own lines (issue 30): a column only where there are some.
TAG_KINDS = ("raw_tag", "unresolved_tag")
LEAK_ROWS_LISTED = 50
PROBLEMS_LISTED = 20
# Past this many viewers the leak table lists only those with findings (a crowd of zeros
# hides the rows that matter); the clean ones are counted beneath it.
LEAK_ALL_ROWS_UPTO = 12


def matrix(request: HttpRequest, world, board=None) -> dict[str, Any]:
    """One world's matrix window: the filters and offsets in the query string apply to the
    world they name (?mw=), so each world keeps its own permalink. `board`: the page's leak
    board (leak_reads.leak_board()), which counts each world's entities."""
    mine = request.GET.get("mw") == world.id
    row_q = query_text(request, "mrq") if mine else None
    col_q = query_text(request, "mcq") if mine else None
    window = matrix_reads.matrix_window(
        world,
        row_q=row_q,
        col_q=col_q,
        row_start=offset_of(request, "mr") if mine else 0,
        col_start=offset_of(request, "mc") if mine else 0,
        counted=board.world_counts.get(world.id, (0, 0)) if board else None,
    )
    base = saves.reverse("memory:save")

    def url(**moved: int) -> str:
        params = {"mw": world.id, "mrq": row_q or "", "mcq": col_q or ""}
        params.update(mr=window.row_start, mc=window.col_start)
        params.update(moved)
        return f"{base}?{urlencode({k: v for k, v in params.items() if v not in ('', None)})}#matrix-{world.id}"

    links = {
        name: url(**{key: page[step]}) if page[step] is not None else None
        for name, key, page, step in (
            ("rows_prev", "mr", window.row_page, "prev"),
            ("rows_next", "mr", window.row_page, "next"),
            ("cols_prev", "mc", window.col_page, "prev"),
            ("cols_next", "mc", window.col_page, "next"),
        )
    }
    rows = window.rows
    viewer_urls = reverse_each("memory:viewer", [], [v.id for v, _name, _cells in rows])
    return {
        "world": world,
        "window": window,
        # Each row made once in Python (save_markup.matrix_row): 300 cells' lookups in the
        # template were half the save page's time.
        "rows_html": [
            save_markup.matrix_row(v.id, name, viewer_urls[v.id], cells) for v, name, cells in rows
        ],
        "row_q": row_q or "",
        "col_q": col_q or "",
        **links,
    }


def projection_context(request: HttpRequest, board=None) -> dict[str, Any]:
    """The overview's leak counts and projection panel (also re-rendered after an action).
    `board`: leak_reads.leak_board(), when the page reads it for more than these counts."""
    board = board or leak_reads.leak_board()
    tally = leak_reads.leak_tally(board)
    # Every kind a known viewer could have, then any other the store holds; omnia's tag kinds
    # only where a prompt holds one (most saves never do: a column of zeros on a phone).
    seen = set().union(*tally.counts.values())
    known = (
        [k for k in leak_reads.leak_kinds() if k not in TAG_KINDS or k in seen]
        if tally.known
        else []
    )
    kinds = known + sorted(seen - set(known))
    # A crowd: only the viewers with findings, most first; the clean ones are summed up.
    crowd = tally.known > LEAK_ALL_ROWS_UPTO
    if crowd:  # the most first, ties by id: only the rows listed are made
        totals = ((-sum(per_kind.values()), v) for v, per_kind in tally.counts.items())
        order = [v for _n, v in heapq.nsmallest(LEAK_ROWS_LISTED, totals)]
        hidden = len(tally.counts) - len(order)
    else:
        order, hidden = tally.known_viewers()[:LEAK_ROWS_LISTED], 0
    listed = [
        (viewer_id, [per_kind.get(k, 0) for k in kinds], sum(per_kind.values()))
        for viewer_id in order
        for per_kind in [tally.counts.get(viewer_id, {})]
    ]
    names = viewer_reads.display_names(r[0] for r in listed)
    prompt_urls = reverse_each("memory:prompt", [], [r[0] for r in listed])
    report = saves.reverse("memory:leaks")
    rows = [
        (v, names[v], per_kind, total, prompt_urls[v], f"{report}?viewer={quote(v, safe='/')}")
        for v, per_kind, total in listed
    ]
    return {
        "leak_kinds": kinds,
        # A kind in words for a column head (the scanner's names are for machines).
        "leak_kind_heads": [LEAK_KIND_HEADS.get(k, k.replace("_", " ")) for k in kinds],
        # names first: (id, name, counts per kind, total)
        # (id, name, counts per kind, total, its prompt's URL, its rows in the leak report)
        "leak_rows": rows,
        # Made in Python (leak_rows.count_row), from leak_rows.
        "leak_rows_html": [leak_rows.count_row(*row) for row in rows],
        "leak_viewers": tally.known,
        "leak_rows_hidden": hidden,
        "leak_pending": len(tally.pending),
        "leak_clean": tally.known - len(tally.counts),
        "omnia_flaws": leak_reads.flaw_counts(board),
        "status": projection_reads.projection_status(),
        "problems": problem_list(limit=PROBLEMS_LISTED),
        "projection_result": None,
        "can_run": request.user.has_perm(EDIT_PERMISSION),
    }


@require_GET
@login_required
def pick_viewer(request: HttpRequest) -> HttpResponse:
    """The header picker's no-JS path: a GET form that lands on the chosen viewer."""
    viewer_id = query_text(request, "viewer")
    if not viewer_id:
        return redirect(saves.reverse("memory:save"))
    viewer = get_viewer_for_user(request, viewer_id)
    return redirect(saves.reverse("memory:viewer", kwargs={"viewer_id": viewer.id}))
