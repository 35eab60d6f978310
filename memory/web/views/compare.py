"""The compare page: two saves (one viewer or all), or two viewers in one save. Its form
submits by GET, so every comparison is a link; the JSON twin is /api/compare."""

from __future__ import annotations

from urllib.parse import urlencode

from django.contrib.auth.decorators import login_required, permission_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_GET

from memory.engine.errors import DomainError, NotFound
from memory.roles import READ_PERMISSION
from memory.selectors import compare as compare_reads


@require_GET
@login_required
@permission_required(READ_PERMISSION, raise_exception=True)
def compare_page(request: HttpRequest) -> HttpResponse:
    context: dict = {
        "saves": compare_reads.save_names(),
        "params": dict.fromkeys(compare_reads.PARAMS, ""),
        "result": None,
        "error": None,
        "json_twin": None,
    }
    status = 200
    try:
        params = compare_reads.params_of(request.GET)
        context["params"].update(params)
        if params:
            context["json_twin"] = f"{reverse('api:compare')}?{urlencode(params)}"
            context["result"] = compare_reads.with_reasons_by_name(compare_reads.comparison(params))
    except DomainError as exc:
        # A bad link still shows the form, with what was wrong, under a 4xx.
        context["error"] = {"detail": str(exc), "field": exc.field}
        status = 404 if isinstance(exc, NotFound) else 400
    return render(request, "memory/compare.html", context, status=status)
