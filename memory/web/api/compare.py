"""The JSON twin of the compare page: `/api/compare?a=&b=[&viewer=]` or `?save=&a=&b=`."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from ninja import Router

from memory.selectors import compare as compare_reads
from memory.web.api import access
from memory.web.api.errors import READ_ERRORS
from memory.web.auth import API_AUTH

# Its own router with the API's auth, registered in omnia_site/api.py beside the others.
router = Router(auth=API_AUTH, tags=["memory"])


@router.get("/compare", response={200: dict[str, Any], **READ_ERRORS}, url_name="compare")
def compare(
    request: HttpRequest,
    a: str | None = None,
    b: str | None = None,
    viewer: str | None = None,
    save: str | None = None,
):
    """Two saves (one viewer, or every viewer both hold): buffer lines only in A, only in B
    and read differently (matched by entry id when the saves share ids, else by time and
    intent; `matching` says which), alias changes, sessions and episodes added or gone, leak
    findings new, fixed and unchanged. With `save`: what viewer `a` knows that viewer `b`
    doesn't. `mode` is "saves" or "viewers"."""
    access.require_reader(request)
    params = compare_reads.params_of({"a": a, "b": b, "viewer": viewer, "save": save})
    return compare_reads.comparison(params)
