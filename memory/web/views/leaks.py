"""A viewer's prompt context with its leaks highlighted, and the leak report of every viewer
(as a page, CSV or JSON)."""

from __future__ import annotations

import csv
from typing import Any
from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required, permission_required
from django.core.exceptions import BadRequest
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect, JsonResponse
from django.middleware.csrf import get_token
from django.utils.text import slugify
from django.views.decorators.http import require_GET, require_POST

from memory import inputs, services
from memory.engine.clock import world_time_at
from memory.engine.errors import Conflict, InvalidInput, NotFound
from memory.engine.leaks.world_scan import CSV_HEADER, FINDING_STATES
from memory.engine.spreadsheet import safe_row
from memory.roles import EDIT_PERMISSION, READ_PERMISSION
from memory.selectors import leaks as leak_reads
from memory.selectors import prompt_view as prompt_reads
from memory.selectors import viewers as viewer_reads
from memory.web.saves import reverse
from memory.web.views import leak_rows, markup
from memory.web.views._common import (
    get_viewer_for_user,
    path_id,
    query_text,
    render_page,
    reverse_each,
    wants_fragment,
)

LEAK_FORMATS = ("html", "csv", "json")


@require_GET
@login_required
def prompt_page(request: HttpRequest, viewer_id: str) -> HttpResponse:
    """The viewer's prompt context now, or with ?at= (an ISO time with a zone, on the world's
    clock) as it stood at that moment; each leak says the first moment it is in the prompt."""
    viewer = get_viewer_for_user(request, viewer_id)
    at = query_text(request, "at")
    try:
        moment = world_time_at(at) if at else None
    except InvalidInput as exc:
        raise BadRequest(str(exc)) from None
    twin = reverse("api:prompt", args=[viewer.id])
    context: dict[str, Any] = {
        "viewer": viewer,
        "json_twin": f"{twin}?{urlencode({'at': moment})}" if moment else twin,
        "at": moment,
        "now_url": reverse("memory:prompt", args=[viewer.id]),
    }
    prompt = prompt_reads.prompt_view(viewer, moment)
    # Every name the page shows, in one read: the viewer's and each finding's entity.
    names = viewer_reads.display_names(
        [viewer.id, *{f["entity_id"] for f in prompt.findings if f.get("entity_id")}]
    )
    context["prompt"] = prompt
    context["viewer_name"] = names[viewer.id]
    for f in prompt.findings:  # the highlights share these dicts: their tooltips say it too
        f["reason_named"] = leak_reads.named_reason(f, names)
    context["findings"] = [(f, names.get(f.get("entity_id"))) for f in prompt.findings]
    return render_page(request, "memory/prompt.html", "prompt-panel", context)


# "from": where the page of rows starts (the filters and the sort carry it, so an action on
# a row answers with the page it was on).
FILTERS = ("viewer", "kind", "world", "state", "sort", "from")
FILTER_PREFIX = "filter_"
SOURCES_LISTED = 5
# The page lists this many rows at a time, as the triage queue does (each carries its forms:
# a save with thousands of findings would make a page of megabytes; a hundred were 10 ms more
# of the page at 20,000 findings); the exports and the API list every one.
LEAK_ROWS_SHOWN = 50


def _filters(source, prefix: str = "") -> dict[str, str]:
    """The report's filters and sort as given: GET for the page; on a POST the form's copy,
    prefixed (the finding's own `kind` is a field of the form too)."""
    found = {}
    for name in FILTERS:
        try:
            value = (inputs.text(source.get(prefix + name), name) or "").strip()
        except InvalidInput as exc:
            raise BadRequest(str(exc)) from None
        if value:
            found[name] = value
    return found


@require_GET
@login_required
@permission_required(READ_PERMISSION, raise_exception=True)
def leaks_page(request: HttpRequest, fmt: str | None = None) -> HttpResponse:
    """One row per distinct leak of every viewer's prompt; ?viewer= ?kind= ?world= ?state=
    filter, ?sort= orders, ?format= exports."""
    fmt = fmt or request.GET.get("format") or "html"
    if fmt not in LEAK_FORMATS:
        return HttpResponse(
            f"format must be one of {', '.join(LEAK_FORMATS)}",
            status=400,
            content_type="text/plain",
        )
    filters = _filters(request.GET)
    if "viewer" in filters:  # an id, or a name typed into the viewer field
        filters["viewer"] = leak_reads.viewer_named(filters["viewer"])
    try:
        if fmt == "html":
            return _render_table(request, filters)
        findings = _findings(filters)
    except NotFound as exc:  # ?viewer= names nobody: a 404 in the format asked for
        if fmt == "json":
            body = {"detail": str(exc), "code": exc.code, "field": "viewer"}
            return JsonResponse(body, status=404)
        raise Http404(str(exc)) from None
    if fmt == "json":
        return JsonResponse({"items": findings, "count": len(findings)})
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = 'attachment; filename="leaks.csv"'
    writer = csv.writer(response)
    writer.writerow(CSV_HEADER)
    writer.writerows(safe_row(_csv_cell(f, column) for column in CSV_HEADER) for f in findings)
    return response


def _findings(filters: dict[str, str]) -> list[dict]:
    return leak_reads.leak_findings(
        viewer_id=filters.get("viewer"),
        kind=filters.get("kind"),
        world_id=filters.get("world"),
        state=filters.get("state"),
        sort=filters.get("sort"),
    )


def _page(filters: dict[str, str], start: int) -> tuple[list[dict], int, set[str]]:
    return leak_reads.leak_findings_page(
        start,
        LEAK_ROWS_SHOWN,
        viewer_id=filters.get("viewer"),
        kind=filters.get("kind"),
        world_id=filters.get("world"),
        state=filters.get("state"),
        sort=filters.get("sort"),
    )


def _csv_cell(finding: dict, column: str) -> object:
    if column == "context":
        parts = ("context_before", "text", "context_after")
        return "".join(str(finding.get(part) or "") for part in parts)
    return finding.get(column)


def _render_table(
    request: HttpRequest,
    filters: dict[str, str],
    *,
    status: int = 200,
    problem: dict[str, str] | None = None,
    confirmed: dict | None = None,
) -> HttpResponse:
    raw_from = filters.get("from", "")
    asked = inputs.whole_number(raw_from, 8) or 0
    start = asked // LEAK_ROWS_SHOWN * LEAK_ROWS_SHOWN
    findings, total, _viewers = _page(filters, start)
    if start and start >= total:  # past the end: the last page
        start = max(total - 1, 0) // LEAK_ROWS_SHOWN * LEAK_ROWS_SHOWN
        findings, total, _viewers = _page(filters, start)
    if start:
        filters = {**filters, "from": str(start)}
    else:
        filters = {k: v for k, v in filters.items() if k != "from"}
    exported = [(k, v) for k, v in filters.items() if k != "from"]
    listed = [(k, v) for k, v in exported if k != "sort"]
    query = urlencode(listed)
    base = reverse("memory:leaks")
    here = urlencode(list(filters.items()))

    def page_url(at: int) -> str:
        pairs = [*exported, *([("from", str(at))] if at else [])]
        return f"{base}?{urlencode(pairs)}" if pairs else base

    pages = None
    if total > LEAK_ROWS_SHOWN:
        pages = {
            "first": start + 1,
            "last": start + len(findings),
            "total": total,
            "prev_url": page_url(max(start - LEAK_ROWS_SHOWN, 0)) if start else None,
            "next_url": page_url(start + LEAK_ROWS_SHOWN)
            if start + LEAK_ROWS_SHOWN < total
            else None,
        }
    # Each URL a row links to made with one reverse per kind of link (reverse_each): a
    # hundred rows made 800 reverses, a sixth of the page.
    viewers = list(dict.fromkeys(f["viewer_id"] for f in findings))
    viewer_urls = reverse_each("memory:viewer", [], viewers)
    prompt_urls = reverse_each("memory:prompt", [], viewers)
    alias_urls = reverse_each("memory:aliases_panel", [], viewers)
    # Each viewer's source rows by one reverse (a page spans a few viewers).
    sources: dict[str, dict[str, None]] = {}
    for f in findings:
        rows = dict.fromkeys(o["source_id"] for o in f["occurrences"] if o["source_id"])
        f["source_ids"] = list(rows)[:SOURCES_LISTED]
        sources.setdefault(f["viewer_id"], {}).update(dict.fromkeys(f["source_ids"]))
    source_urls = {v: reverse_each("memory:entry", [v], list(ids)) for v, ids in sources.items()}
    for f in findings:
        f["viewer_url"] = viewer_urls[f["viewer_id"]]
        f["prompt_url"] = f"{prompt_urls[f['viewer_id']]}#leak-at-{f['start']}"
        names = {f["viewer_id"]: f["viewer_name"], f["entity_id"]: f["entity_name"]}
        f["reason_named"] = leak_reads.named_reason(f, names)
        # The first occurrence's row, then the other rows the leak stands in (a few).
        f["source_urls"] = [source_urls[f["viewer_id"]][i] for i in f.pop("source_ids")]
        f["alias_url"] = (
            f"{alias_urls[f['viewer_id']]}?all_aliases=1#alias-{slugify(f['entity_id'])}"
            if f["can_alias"]
            else None
        )
        f["dom"] = slugify(f"{f['viewer_id']}-{f['section']}-{f['kind']}-{f['start']}")
        f["problem_key"] = "|".join((f["viewer_id"], f["section"], f["kind"], f["text"]))
        f["alias_key"] = f"alias|{f['viewer_id']}|{f['entity_id']}"
    problem = dict(problem or {})
    if problem:
        # A problem is shown beside its row; one whose row is gone (the finding moved) above.
        keys = {f["problem_key"] for f in findings} | {f["alias_key"] for f in findings}
        problem["placed"] = problem["key"] in keys
    can_edit = request.user.has_perm(EDIT_PERMISSION)
    csrf = markup.csrf_input(get_token(request)) if can_edit and findings else ""
    hidden = leak_rows.filter_inputs(filters)
    urls = {
        "accept": reverse("memory:leak_accept"),
        "reopen": reverse("memory:leak_reopen"),
        "alias": reverse("memory:leak_alias"),
    }
    rows_html = [
        leak_rows.leak_row(
            f, can_edit=can_edit, csrf=csrf, filters=hidden, problem=problem, urls=urls
        )
        for f in findings
    ]
    viewer_name = None
    if filters.get("viewer"):
        viewer_name = viewer_reads.display_names([filters["viewer"]])[filters["viewer"]]
    context = {
        "findings": findings,
        "rows_html": rows_html,
        "total": total,
        "pages": pages,
        "filters": filters,
        "viewer_name": viewer_name,
        "viewer_value": filters.get("viewer", ""),
        "here": here,
        "problem": problem,
        "confirmed": confirmed,
        "kinds": list(leak_reads.leak_kinds()),
        "states": list(FINDING_STATES),
        "sorts": list(leak_reads.SORT_NAMES),
        "worlds": leak_reads.leak_worlds(),
        "can_edit": can_edit,
        "csv_url": f"{base}?{urlencode([('format', 'csv'), *exported])}",
        "json_url": f"{base}?{urlencode([('format', 'json'), *exported])}",
        "json_twin": reverse("api:leaks") + (f"?{query}" if query else ""),
    }
    return render_page(request, "memory/leaks.html", "leak-table", context, status=status)


@require_GET
@login_required
@permission_required(READ_PERMISSION, raise_exception=True)
def leak_viewers(request: HttpRequest) -> HttpResponse:
    """The viewer field's suggestions as one types (?viewer=): an <option> each, for its
    datalist (the viewers with a stored finding whose name or id holds the text)."""
    filters = _filters(request.GET)
    found = leak_reads.viewer_suggestions(filters.get("viewer", ""))
    return HttpResponse(markup.viewer_options(found, None))


def _after_write(
    request: HttpRequest,
    filters: dict[str, str],
    problem: dict | None = None,
    confirmed: dict | None = None,
):
    """Back to the report with its filters: the table fragment for htmx (with the write's
    confirmation and undo, when it has them), a redirect (its words as a message) or the page
    with the problem beside the row without it."""
    if problem is None and not wants_fragment(request):
        if confirmed:
            messages.success(request, confirmed["message"])
        query = urlencode(list(filters.items()))
        return HttpResponseRedirect(reverse("memory:leaks") + (f"?{query}" if query else ""))
    status = 400 if problem and not wants_fragment(request) else 200
    return _render_table(request, filters, status=status, problem=problem, confirmed=confirmed)


def _finding_key(request: HttpRequest) -> tuple[str, str, str, str]:
    try:
        values = [inputs.text(request.POST.get(name, ""), name) or "" for name in KEY_FIELDS]
    except InvalidInput as exc:
        raise BadRequest(str(exc)) from None
    viewer = get_viewer_for_user(request, values[0])
    return viewer.id, values[1], values[2], values[3]


KEY_FIELDS = ("viewer_id", "section", "kind", "text")


@require_POST
@login_required
@permission_required(EDIT_PERMISSION, raise_exception=True)
def accept_leak(request: HttpRequest) -> HttpResponse:
    """Accept one finding as expected (editors; a reason is required)."""
    key = _finding_key(request)
    filters = _filters(request.POST, FILTER_PREFIX)
    try:
        services.accept_leak(*key, request.POST.get("reason", ""), user=request.user)
    except (InvalidInput, NotFound, Conflict) as exc:
        return _after_write(request, filters, {"key": "|".join(key), "error": str(exc)})
    return _after_write(request, filters)


@require_POST
@login_required
@permission_required(EDIT_PERMISSION, raise_exception=True)
def reopen_leak(request: HttpRequest) -> HttpResponse:
    """Withdraw an acceptance (editors): the finding is a leak again."""
    key = _finding_key(request)
    filters = _filters(request.POST, FILTER_PREFIX)
    try:
        services.reopen_leak(*key, user=request.user)
    except NotFound as exc:
        return _after_write(request, filters, {"key": "|".join(key), "error": str(exc)})
    return _after_write(request, filters)


@require_POST
@login_required
@permission_required(EDIT_PERMISSION, raise_exception=True)
def add_alias(request: HttpRequest) -> HttpResponse:
    """Give the viewer a label for the finding's entity, through the alias edit service (its
    validation, history and audit); the viewer's findings are rescanned in the same write."""
    viewer = get_viewer_for_user(request, request.POST.get("viewer_id", ""))
    target_id = path_id(request.POST.get("target_id", ""), "target_id")
    filters = _filters(request.POST, FILTER_PREFIX)
    # "Undo" puts back the label the viewer had before ("restore" with none: no alias).
    restore = request.POST.get("action") == "restore"
    try:
        label = inputs.text(request.POST.get("label", ""), "label") or ""
        if restore and not label:
            done = services.delete_alias(
                viewer.id, target_id, user=request.user, source="leak report"
            )
        else:
            done = services.set_alias(
                viewer.id, target_id, label, user=request.user, source="leak report"
            )
    except services.AliasRefused as exc:
        problem = {"key": f"alias|{viewer.id}|{target_id}", "error": "; ".join(exc.errors)}
        return _after_write(request, filters, problem)
    except InvalidInput as exc:
        return _after_write(
            request, filters, {"key": f"alias|{viewer.id}|{target_id}", "error": str(exc)}
        )
    except NotFound as exc:
        raise Http404(str(exc)) from None
    names = viewer_reads.display_names([viewer.id, target_id])
    if restore:
        words = f"Undone: {names[viewer.id]}’s label for {names[target_id]} is back"
        message = words + (f" to “{done.after}”." if done.after else " to none.")
        return _after_write(request, filters, confirmed={"message": message})
    message = f"Saved: {names[viewer.id]} now calls {names[target_id]} “{done.after}”."
    undo = {"viewer_id": viewer.id, "target_id": target_id, "label": done.before or ""}
    return _after_write(request, filters, confirmed={"message": message, "undo": undo})
