"""Quarantined rows as the overview panel and the API list them (issue 14: a poison row is
recorded with its reason, never fatal)."""

from __future__ import annotations

from dataclasses import dataclass

from memory.active_save import scoped_instances
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


# Raw (scoped_instances): a save's page, the overview and their JSON twins read it every
# request, and the ORM built the statement in longer than the database answered it (most
# saves have no problem at all).
_COLUMNS = ("world_id", "owner_id", "table_name", "row_ref", "reason", "first_seen")


def problem_list(*, limit: int = 50, world_id: str | None = None) -> ProblemList:
    where = "world_id = %s" if world_id else "TRUE"
    found = scoped_instances(
        ProjectionProblem,
        f"{where} ORDER BY first_seen, id LIMIT %s",
        [*([world_id] if world_id else []), limit],
        fields=_COLUMNS,
    )
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
        for p in found
    ]
    if len(items) < limit:  # they are all there is (most saves have none): no count to ask
        return ProblemList(items=items, count=len(items))
    rows = ProjectionProblem.objects.all()
    return ProblemList(
        items=items, count=(rows.filter(world_id=world_id) if world_id else rows).count()
    )
