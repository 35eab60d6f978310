"""Quarantined rows: what the fold could not fold, with the reason (issue 14)."""

from __future__ import annotations

from dataclasses import asdict

from django.http import HttpRequest
from ninja import Router, Schema

from memory import inputs
from memory.selectors.problems import problem_list
from memory.web.api import access
from memory.web.api.errors import READ_ERRORS
from memory.web.saves import SaveName

router = Router()


class ProblemOut(Schema):
    world_id: str | None
    owner_id: str | None
    table: str
    row: str
    reason: str
    first_seen: str


class ProblemListOut(Schema):
    items: list[ProblemOut]
    count: int


@router.get("/problems", response={200: ProblemListOut, **READ_ERRORS}, url_name="problems")
def problems(request: HttpRequest, save: SaveName, limit: int = 50, world: str | None = None):
    """Rows the projection fold quarantined (skipped, its watermark moved on), oldest first;
    `count` is every recorded problem, `items` at most `limit` of them."""
    access.require_reader(request)
    answer = problem_list(limit=inputs.limit(limit), world_id=inputs.text(world, "world") or None)
    return {"items": [asdict(item) for item in answer.items], "count": answer.count}
