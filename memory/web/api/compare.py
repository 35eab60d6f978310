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
    viewers_from: str | None = None,
    lines_from: str | None = None,
):
    """Two saves (one viewer, or every viewer both hold): buffer lines only in A, only in B
    and read differently (matched by entry id when the saves share ids, else by what
    happened: the same time and intent, then the same moment told at another time or by the
    other omnia era; `matching` says which), alias changes, sessions and episodes added or
    gone, leak findings new, fixed and unchanged. With `save`: what viewer `a` knows that
    viewer `b` doesn't. Viewers by id or by name. `mode` is "saves" or "viewers".

    Bounded as the page is, and paged with cursors rather than streamed: 5 viewers a page
    (`viewers_from`; `pages.next_viewers` holds the next page's parameters), 50 differing
    lines per viewer (`lines_from`; each buffer's `next_lines`), lines cut at 2,000
    characters, other lists at 50 (`counts` keeps their lengths), 5 s of merging (a buffer
    the time ran out on says `complete: false` and how many rows of each save it read).
    `complete` says whether this answer is all of it; `manage.py compare` gives all of it."""
    access.require_reader(request)
    params = compare_reads.params_of(
        {
            "a": a,
            "b": b,
            "viewer": viewer,
            "save": save,
            "viewers_from": viewers_from,
            "lines_from": lines_from,
        }
    )
    result = compare_reads.comparison(params, compare_reads.page_budget(params))
    return compare_reads.bounded(params, result)
