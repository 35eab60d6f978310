"""The knowledge matrix of one world: viewers x targets, the label each viewer uses for each
other entity (the overview shows a window of it, paged and filtered)."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Count

from memory.active_save import scoped_instances
from memory.engine.aliases import alias_state, label_suspicions
from memory.engine.knowledge import (
    AGENTS,
    agents_sql,
    name_owners,
    true_names,
    viewer_of,
    world_knowledge,
)
from memory.models import ObjectType, WorldObject
from memory.selectors.viewers import search_entities, world_entities


@dataclass(frozen=True)
class MatrixCell:
    label: str | None
    state: str
    suspicions: tuple[str, ...] = ()  # aliases.label_suspicions of the label, in words


def knowledge_matrix(world_id: str) -> tuple[list[WorldObject], dict[str, dict[str, MatrixCell]]]:
    """Viewers × targets: the label each viewer uses for each other entity."""
    knowledge = world_knowledge(world_id)
    entities = knowledge.entities
    owners: dict[str, set[str]] = {}
    for obj in entities:
        if name := knowledge.true_name(obj.id):
            owners.setdefault(name.strip(), set()).add(obj.id)
    matrix: dict[str, dict[str, MatrixCell]] = {}
    for viewer_obj in entities:
        viewer = viewer_of(viewer_obj)
        row = {}
        for target in entities:
            if target.id == viewer.id:
                continue
            label = viewer.aliases.get(target.id)
            row[target.id] = MatrixCell(
                label=label,
                state=alias_state(label, knowledge.true_name(target.id)),
                suspicions=label_suspicions(label, target.id, owners),
            )
        matrix[viewer.id] = row
    return entities, matrix


# What a row of the matrix reads of its viewer (viewer_of: its id and labels).
VIEWER_COLUMNS = ("id", "world_id", "is_agent", "aliases_json")

# The overview draws at most this window of a world's matrix; the user pages and filters it.
MATRIX_ROWS = 25
MATRIX_COLS = 12


@dataclass
class MatrixWindow:
    """A window of one world's viewers × targets matrix, chosen by filters and offsets."""

    world: WorldObject
    entities: int  # every entity of the world
    viewer_total: int  # viewers matching the row filter
    target_total: int  # targets matching the column filter
    row_start: int
    col_start: int
    viewers: list[WorldObject]
    targets: list[WorldObject]
    cells: dict[str, dict[str, MatrixCell]]  # viewer -> target -> cell (self absent)
    names: dict[str, str]  # display name of every viewer and target shown

    @property
    def heads(self) -> list[tuple[WorldObject, str]]:
        return [(t, self.names[t.id]) for t in self.targets]

    @property
    def rows(
        self,
    ) -> list[tuple[WorldObject, str, list[tuple[WorldObject, MatrixCell | None]]]]:
        return [
            (v, self.names[v.id], [(t, self.cells[v.id].get(t.id)) for t in self.targets])
            for v in self.viewers
        ]

    def _page(self, start: int, total: int, size: int) -> dict[str, int | None]:
        return {
            "prev": max(start - size, 0) if start > 0 else None,
            "next": start + size if start + size < total else None,
            "first": start + 1 if total else 0,
            "last": min(start + size, total),
        }

    @property
    def row_page(self) -> dict[str, int | None]:
        return self._page(self.row_start, self.viewer_total, MATRIX_ROWS)

    @property
    def col_page(self) -> dict[str, int | None]:
        return self._page(self.col_start, self.target_total, MATRIX_COLS)


def _matching(world_id: str, q: str | None):
    qs = world_entities(world_id)
    if q:
        qs = search_entities(qs, q)
    return qs.order_by("id")


def _unfiltered(
    world_id: str, agents: bool, fields: tuple[str, ...], start: int, size: int
) -> list[WorldObject]:
    """`size` of the world's entities (its agents) from `start`, in id order, with `fields`:
    what _matching(world_id, None) sliced gives, read raw (active_save.scoped_instances). A
    save's page opens on this window, and the ORM built its statements in longer than the
    database answered them (the viewers 1.21 -> 0.68 ms on PostgreSQL, 0.65 -> 0.23 on SQLite;
    the targets 0.87 -> 0.42 and 0.39 -> 0.12)."""
    agent = f" AND {agents_sql('')}" if agents else ""
    return scoped_instances(
        WorldObject,
        f"type = %s AND world_id = %s{agent} ORDER BY id LIMIT %s OFFSET %s",
        [ObjectType.ENTITY.value, world_id, size, start],
        fields=fields,
    )


def matrix_window(
    world: WorldObject,
    *,
    row_q: str | None = None,
    col_q: str | None = None,
    row_start: int = 0,
    col_start: int = 0,
    counted: tuple[int, int] | None = None,
) -> MatrixWindow:
    """The labels a window of viewers uses for a window of targets: every query bounded by
    the window, never by the world (a 2,000-entity world is four million cells).
    `counted`: (the world's entities, its agents), when the caller has read them (the save
    page's leak board holds every entity): unfiltered, they are the two totals."""
    # Rows are viewers: an entity the save marks as no agent (is_agent=0) thinks nothing and
    # names nobody, so it is only ever a column.
    viewers_qs = _matching(world.id, row_q).filter(AGENTS)
    targets_qs = _matching(world.id, col_q)
    if row_q is None and col_q is None and counted is not None:
        target_total, viewer_total = counted
    elif row_q == col_q:  # the same entities on both axes (no filter, most often): one
        # count, of the id the entities' index holds (COUNT(uid) read every row's heap: 1.3 ms)
        both = targets_qs.aggregate(targets=Count("id"), viewers=Count("id", filter=AGENTS))
        viewer_total, target_total = both["viewers"], both["targets"]
    else:
        viewer_total, target_total = viewers_qs.count(), targets_qs.count()
    row_start = max(0, min(row_start, max(viewer_total - 1, 0)))
    col_start = max(0, min(col_start, max(target_total - 1, 0)))
    # What the window reads of each: a viewer's labels, a target's id (its labels are
    # kilobytes of JSON that only its own row uses).
    if row_q is None and col_q is None:
        viewers = _unfiltered(world.id, True, VIEWER_COLUMNS, row_start, MATRIX_ROWS)
        targets = _unfiltered(world.id, False, ("id",), col_start, MATRIX_COLS)
    else:
        viewers = list(viewers_qs.only(*VIEWER_COLUMNS)[row_start : row_start + MATRIX_ROWS])
        targets = list(targets_qs.only("id")[col_start : col_start + MATRIX_COLS])
    # One query names both axes: the true names decide the cells' states and the headers.
    names = true_names(list({o.id: None for o in (*viewers, *targets)}))
    shown = [viewer_of(v) for v in viewers]
    # One more read: which of the window's labels are some entity's true name.
    owners = name_owners(v.aliases[t.id] for v in shown for t in targets if t.id in v.aliases)
    cells: dict[str, dict[str, MatrixCell]] = {}
    for viewer in shown:
        cells[viewer.id] = {
            t.id: MatrixCell(
                label=label,
                state=alias_state(label, names.get(t.id)),
                suspicions=label_suspicions(label, t.id, owners),
            )
            for t in targets
            if t.id != viewer.id
            for label in (viewer.aliases.get(t.id),)
        }
    return MatrixWindow(
        world=world,
        entities=world_entities(world.id).count()
        if (row_q or col_q)
        else max(viewer_total, target_total),
        viewer_total=viewer_total,
        target_total=target_total,
        row_start=row_start,
        col_start=col_start,
        viewers=viewers,
        targets=targets,
        cells=cells,
        names={o.id: names.get(o.id) or o.id for o in (*viewers, *targets)},
    )
