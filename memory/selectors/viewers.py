"""Viewers as the pages list them: the entity lists and windows, the viewer switcher's ids,
the worlds — and the one rule for what a page calls an entity (display_names). What a viewer
calls each other entity, its alias table, is memory.selectors.aliases."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from django.db.models import Q

from memory.active_save import scoped_instances, scoped_rows
from memory.engine.knowledge import (
    AGENTS,
    AGENTS_SQL,
    Viewer,
    true_names,
)
from memory.models import Attribute, ObjectType, WorldObject


def search_entities(qs, q: str):
    """Entities whose id or any attribute value holds `q` (attributes join by id within the
    active save: a subquery, since the composite keys leave no relation to follow)."""
    holding = Attribute.objects.filter(value__icontains=q).values("object_id")
    return qs.filter(Q(id__icontains=q) | Q(id__in=holding))


def world_entities(world_id: str | None):
    qs = WorldObject.objects.filter(type=ObjectType.ENTITY)
    return qs.filter(world_id=world_id) if world_id else qs


def list_viewers(*, world_id: str | None = None, q: str | None = None) -> list[WorldObject]:
    qs = world_entities(world_id)
    if q:
        qs = search_entities(qs, q)
    return list(qs.order_by("world_id", "id"))


# More ids than this are named from every name of the save (a world's entities are a few
# thousand; its named objects are what such a read returns).
NAMED_BY_ID_UPTO = 500


def display_names(ids: Iterable[str], known: Mapping[str, str] | None = None) -> dict[str, str]:
    """What a page calls each of these entities: its true name if it has one, else its id,
    in one query (a leak report names every viewer of a 2,000-entity world at once). Pages,
    their JSON twins, the leak report and the switcher all name through this. `known`:
    names this page has read already (its viewer's), not asked again."""
    wanted = list(dict.fromkeys(ids))
    known = known or {}
    asked = [i for i in wanted if i not in known]
    if len(asked) > NAMED_BY_ID_UPTO:
        # Every name of the save, read once, costs less than the lists of ids: 2,000 viewers
        # named in four reads of 500 ids were 12.6 ms on PostgreSQL, the save's names 2.2 ms.
        names = true_names(None)
    else:
        names = true_names(asked) if asked else {}
    return {i: known[i] if i in known else (names.get(i) or i) for i in wanted}


@dataclass(frozen=True)
class Entity:
    """An entity as a list shows it: its display name first, the id beside it."""

    id: str
    name: str  # the true name, else the id
    world_id: str | None
    location_id: str | None
    is_agent: bool | None  # None: the save does not say (older omnia files)

    @property
    def named(self) -> bool:
        return self.name != self.id

    @property
    def agent(self) -> bool:
        """A viewer (an NPC that thinks) unless the save says it is not (is_agent=0)."""
        return self.is_agent is not False


def entities_named(objs: Iterable[WorldObject]) -> list[Entity]:
    objs = list(objs)
    names = display_names(o.id for o in objs)
    return [
        Entity(
            id=o.id,
            name=names[o.id],
            world_id=o.world_id,
            location_id=o.location_id,
            is_agent=None if o.is_agent is None else bool(o.is_agent),
        )
        for o in objs
    ]


_LISTED = ("id", "world_id", "location_id", "is_agent")


def _entities_in_order(world_id: str | None, offset: int, limit: int | None) -> list:
    """world_entities(world_id) in (world, id) order from `offset`, `limit` of them (all when
    None), with the columns a list shows: the same rows as the queryset, read raw
    (active_save.scoped_instances)."""
    condition, params = "type = %s", [ObjectType.ENTITY.value]
    if world_id:
        condition, params = f"{condition} AND world_id = %s", [*params, world_id]
    condition += " ORDER BY world_id, id"
    if limit is None:
        return scoped_instances(WorldObject, condition, params, fields=_LISTED)[offset:]
    condition, params = f"{condition} LIMIT %s OFFSET %s", [*params, limit, offset]
    return scoped_instances(WorldObject, condition, params, fields=_LISTED)


def entity_list(
    *,
    q: str | None = None,
    world_id: str | None = None,
    limit: int | None = None,
    offset: int = 0,
    total: int | None = None,
) -> tuple[list[Entity], int]:
    """Entities matching `q` (id or any attribute, so a true name finds its entity), named,
    `limit` of them from `offset`, and how many match: the overview's list and /api/entities.
    `total`: how many match, when the caller has counted them already."""
    qs = world_entities(world_id)
    if q:
        qs = search_entities(qs, q)
    # What a list shows of each: not its labels and connections (kilobytes of JSON each).
    qs = qs.order_by("world_id", "id").only(*_LISTED)
    if q:
        objs = list(qs[offset:] if limit is None else qs[offset : offset + limit])
    else:  # a save's page opens on this list: read raw (the ORM built it in longer)
        objs = _entities_in_order(world_id, offset, limit)
    complete = objs and (limit is None or len(objs) < limit)
    if total is None:
        total = offset + len(objs) if complete or (not objs and offset == 0) else qs.count()
    return entities_named(objs), total


def viewer_window(
    *, q: str | None = None, limit: int = 50, total: int | None = None
) -> tuple[list[Entity], int]:
    """The first `limit` entities matching `q`, named, and how many match (`total`, when the
    caller has counted them): a list a person can read, however large the world."""
    return entity_list(q=q, limit=limit, total=total)


def _viewers(world_id: str | None):
    return world_entities(world_id).filter(AGENTS)  # non-agents are no viewers (Entity.agent)


def viewer_ids(world_id: str | None) -> list[str]:
    """Ids of the entities of one world (or of every world), in id order: ids only, cheap
    enough for a 1,000-entity switcher to slice from."""
    return list(_viewers(world_id).order_by("id").values_list("id", flat=True))


def viewer_window_ids(viewer: Viewer, limit: int) -> tuple[list[str], int]:
    """At most `limit` viewer ids of the viewer's world in id order, around the viewer (first
    ones if it is no viewer itself), and how many there are: what `viewer_ids` would give
    sliced, in one statement that reads `limit` ids on either side of the viewer and counts
    the world's viewers on its index, not the world's thousands of ids."""
    world = viewer.obj.world_id
    # The viewer is in the list unless the save says it is no agent: then the first ones.
    around = viewer.id if viewer.obj.is_agent != 0 else ""
    agents = (
        f"FROM {WorldObject._meta.db_table} o WHERE o.game_save_id = %(save)s AND o.type = %s "
        f"{'' if world is None else 'AND o.world_id = %s '}AND {AGENTS_SQL}"
    )
    where = [ObjectType.ENTITY.value, *([] if world is None else [world])]
    # Rows (id, NULL, NULL) of the `limit` ids before the viewer and from it on, then one
    # (NULL, how many, how many before it). The NULLs are typed: PostgreSQL gives an untyped
    # NULL of a subquery the type text, which a count's column does not match.
    ids_only = "SELECT o.id, CAST(NULL AS BIGINT), CAST(NULL AS BIGINT)"
    rows = scoped_rows(
        f"SELECT * FROM ({ids_only} {agents} AND o.id < %s ORDER BY o.id DESC LIMIT %s) b "
        f"UNION ALL SELECT * FROM ({ids_only} {agents} AND o.id >= %s ORDER BY o.id LIMIT %s) a "
        f"UNION ALL SELECT NULL, COUNT(*), SUM(CASE WHEN o.id < %s THEN 1 ELSE 0 END) {agents}",
        [*where, around, limit, *where, around, limit, around, *where],
    )
    ids = sorted(i for i, _n, _m in rows if i is not None)
    total, before = next((n, m or 0) for i, n, m in rows if i is None)
    start = max(0, min(before - limit // 2, total - limit))
    # `ids` hold the viewers from position `first` on, and the window lies within them.
    first = before - sum(1 for i in ids if i < around)
    return ids[start - first : start - first + limit], total


def list_worlds() -> list[WorldObject]:
    # Sorted here: ORDER BY id had SQLite walk every object of the save in the (save, id)
    # index to skip a sort of the few worlds (1.4 ms of a save's page at 2,000 entities),
    # where the (save, type) index finds them at once.
    # Raw (scoped_instances): the ORM built the statement longer than the database answered.
    worlds = scoped_instances(WorldObject, "type = %s", [ObjectType.WORLD.value])
    return sorted(worlds, key=lambda w: w.id)
