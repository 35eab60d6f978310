"""The compare page: two saves (one viewer or all), or two viewers in one save. Its form
submits by GET, so every comparison is a link; the JSON twin is /api/compare. Viewer pages
and the overview link here with the form filled in."""

from __future__ import annotations

import shlex
from typing import Any
from urllib.parse import urlencode

from django.contrib.auth.decorators import login_required, permission_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_GET

from memory.engine.errors import DomainError, NotFound
from memory.roles import READ_PERMISSION
from memory.selectors import compare as compare_reads


def _url(params: dict[str, str] | None, *, qa: bool) -> str | None:
    if params is None:
        return None
    query = {**params, **({"qa": "1"} if qa else {})}
    return f"{reverse('memory:compare')}?{urlencode(query)}"


def _command(params: dict[str, str]) -> str:
    """The command that gives all of this comparison, for a page that shows part of it."""
    words = ["manage.py", "compare", params.get("a", ""), params.get("b", "")]
    if params.get("save"):
        words += ["--save", params["save"]]
    if params.get("viewer"):
        words += ["--viewer", params["viewer"]]
    return shlex.join(words)


def _links(result: dict[str, Any], *, qa: bool) -> None:
    """The page's copy of each page's parameters, as links."""
    buffers = (
        [result["memories"]]
        if result["mode"] == "viewers"
        else [v["buffer"] for v in result["viewers"]]
    )
    for buffer in buffers:
        buffer["next_url"] = _url(buffer["next_lines"], qa=qa)
        buffer["prev_url"] = _url(buffer["prev_lines"], qa=qa)
    pages = result.get("pages") or {}
    result["next_viewers_url"] = _url(pages.get("next_viewers"), qa=qa)
    result["prev_viewers_url"] = _url(pages.get("prev_viewers"), qa=qa)


@require_GET
@login_required
@permission_required(READ_PERMISSION, raise_exception=True)
def compare_page(request: HttpRequest) -> HttpResponse:
    qa = request.GET.get("qa") == "1"
    context: dict = {
        "saves": compare_reads.save_names(),
        "params": dict.fromkeys(compare_reads.PARAMS, ""),
        "result": None,
        "error": None,
        "json_twin": None,
        "qa": qa,
        "choices": [],
        "seconds": compare_reads.SECONDS,
        "waiting": None,
        "other_save": "",
        "qa_url": None,
        "command": "",
    }
    status = 200
    try:
        params = compare_reads.params_of(request.GET)
        context["params"].update(params)
        chosen = {k: v for k, v in params.items() if k in compare_reads.PARAMS}
        context["qa_url"] = _url(params, qa=not qa) if chosen else None
        context["choices"] = compare_reads.viewer_choices(params)
        context["other_save"] = next((s for s in context["saves"] if s != params.get("a")), "")
        missing = [k for k in ("a", "b") if not params.get(k)]
        if chosen and missing:
            # A link from a viewer page or the overview fills in what it knows.
            what = "viewer B" if params.get("save") else "save B"
            what = what if missing == ["b"] else ("viewer A" if params.get("save") else "save A")
            context["waiting"] = f"Choose {what} to compare."
        elif chosen:
            context["json_twin"] = f"{reverse('api:compare')}?{urlencode(params)}"
            context["command"] = _command(chosen)
            result = compare_reads.comparison(params, compare_reads.page_budget(params))
            result = compare_reads.bounded(params, compare_reads.with_reasons_by_name(result))
            _links(result, qa=qa)
            context["result"] = result
    except DomainError as exc:
        # A bad link still shows the form, with what was wrong, under a 4xx.
        context["error"] = {"detail": str(exc), "field": exc.field}
        status = 404 if isinstance(exc, NotFound) else 400
    return render(request, "memory/compare.html", context, status=status)
