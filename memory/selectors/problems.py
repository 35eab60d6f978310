"""Quarantined rows as the overview panel and the API list them (issue 14: a poison row is
recorded with its reason, never fatal)."""

from __future__ import annotations

from dataclasses import dataclass

from memory.engine.clock import wall_iso
from memory.engine.projections.problems import CYCLE_TABLE
from memory.models import ProjectionProblem


@dataclass(frozen=True)
class ProblemRow:
    world_id: str | None
    owner_id: str | None
    table: str
    row: str  # the row's id, or "rowid N" when its id is NULL
    reason: str
    first_seen: str
    cycle: bool = False  # no row: the save's projection cycle itself failed


@dataclass(frozen=True)
class ProblemList:
    items: list[ProblemRow]
    count: int  # every recorded problem; `items` holds at most the limit asked for


def problem_list(*, limit: int = 50, world_id: str | None = None) -> ProblemList:
    rows = ProjectionProblem.objects.all()
    if world_id:
        rows = rows.filter(world_id=world_id)
    items = [
        ProblemRow(
            world_id=p.world_id,
            owner_id=p.owner_id,
            table=p.table_name,
            row=p.row_ref,
            reason=p.reason,
            first_seen=wall_iso(p.first_seen),
            cycle=p.table_name == CYCLE_TABLE,
        )
        for p in rows.order_by("first_seen", "id")[:limit]
    ]
    # Fewer than the limit: they are all there is (most saves have none), no count to ask.
    return ProblemList(items=items, count=len(items) if len(items) < limit else rows.count())
