"""What a viewer is, and what one world holds that a viewer may see (seed 000 §1-§2).

A viewer is an entity with its parsed aliases. World knowledge is one world's objects,
attributes and ACLs, loaded in three queries; what a viewer may see of them is decided by
`memory.engine.visibility.can_see`, the one rule every reader (alias suggestions, prompt,
digest, leak scanner) goes through.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from django.conf import settings
from django.db.models import Q

from memory.engine.aliases import AliasesJsonError, parse_aliases_json
from memory.engine.errors import NotFound
from memory.engine.visibility import can_see
from memory.models import Attribute, AttributeAcl, ObjectType, WorldObject


@dataclass(frozen=True)
class Viewer:
    """An entity reading the world: its id and aliases (what the pure renderers take, as an
    `aliases.AliasHolder`), the row they came from, and why its stored aliases could not be
    read, if they could not."""

    # id and aliases are fields, not read through `obj`: the renderers look them up per row.
    id: str
    aliases: Mapping[str, str]
    obj: WorldObject
    aliases_error: str | None = None

    @classmethod
    def of(cls, id: str, aliases: Mapping[str, str]) -> Viewer:
        """A viewer made by hand (tests, pure use): an unsaved entity row carries the id."""
        return cls(id=id, aliases=aliases, obj=WorldObject(id=id, type=ObjectType.ENTITY))


def viewer_of(obj: WorldObject) -> Viewer:
    try:
        aliases = parse_aliases_json(obj.aliases_json)
        error = None
    except AliasesJsonError as exc:
        # A corrupt row still renders: as someone who knows nobody, with the reason shown.
        aliases, error = {}, str(exc)
    return Viewer(id=obj.id, aliases=aliases, obj=obj, aliases_error=error)


def get_viewer(viewer_id: str) -> Viewer:
    obj = WorldObject.objects.filter(id=viewer_id, type=ObjectType.ENTITY).first()
    if obj is None:
        raise NotFound(f"no entity with id {viewer_id!r}", field="viewer_id")
    return viewer_of(obj)


def true_name_attributes() -> list[str]:
    return list(settings.OMNIA_TRUE_NAME_ATTRIBUTES)


def true_names(object_ids: list[str]) -> dict[str, str]:
    """The true name of each of these objects that has one (the first of the true-name
    attributes it carries), in one query bounded by the ids asked for."""
    order = true_name_attributes()
    found: dict[str, tuple[int, str]] = {}
    rows = Attribute.objects.filter(object_id__in=object_ids, name__in=order).values_list(
        "object_id", "name", "value"
    )
    for object_id, name, value in rows:
        rank = order.index(name)
        if object_id not in found or rank < found[object_id][0]:
            found[object_id] = (rank, value)
    return {object_id: value for object_id, (_rank, value) in found.items()}


@dataclass
class WorldKnowledge:
    """One world's objects, attributes and ACLs, loaded in three queries."""

    world_id: str | None
    objects: dict[str, WorldObject]
    attributes: dict[str, dict[str, Attribute]]
    acl: dict[tuple[str, str], set[str]]

    @property
    def entities(self) -> list[WorldObject]:
        return [o for o in self.objects.values() if o.type == ObjectType.ENTITY]

    def true_name(self, object_id: str) -> str | None:
        attrs = self.attributes.get(object_id, {})
        for name in true_name_attributes():
            if name in attrs:
                return attrs[name].value
        return None

    def can_see(self, viewer_id: str, attr: Attribute) -> bool:
        return can_see(
            viewer_id,
            attr.object_id,
            attr.visibility,
            self.acl.get((attr.object_id, attr.name), ()),
        )

    def visible_attributes(self, viewer_id: str, object_id: str) -> dict[str, str]:
        return {
            name: attr.value
            for name, attr in self.attributes.get(object_id, {}).items()
            if self.can_see(viewer_id, attr)
        }


def world_knowledge(
    world_id: str | None, *, attributes_for: Iterable[str] | None = None
) -> WorldKnowledge:
    """One world's objects, with the attributes and ACLs of every object — or, with
    `attributes_for`, of those objects only, and each object's id and type alone (a panel
    showing a hundred targets of a 2,000-entity world should not read the other 1,900)."""
    objects = (
        WorldObject.objects.all()
        if world_id is None
        else WorldObject.objects.filter(Q(id=world_id) | Q(world_id=world_id))
    )
    if attributes_for is not None:
        # A panel reading a few objects' attributes needs of the rest only what they are:
        # (id, type) rows, not model instances (2,000 of those cost 17 ms a page).
        rows = objects.order_by("id").values_list("id", "type", named=True)
        by_id = {o.id: o for o in rows}
    else:
        by_id = {o.id: o for o in objects.order_by("id")}
    knowledge = WorldKnowledge(world_id=world_id, objects=by_id, attributes={}, acl={})
    load_attributes(knowledge, list(by_id) if attributes_for is None else list(attributes_for))
    return knowledge


def load_attributes(knowledge: WorldKnowledge, object_ids: list[str]) -> None:
    """Add these objects' attributes and ACL rows to `knowledge` (two queries)."""
    # Named rows, not model instances: the same fields to read, at a fraction of the cost
    # for a world of thousands of attributes.
    for attr in (
        Attribute.objects.filter(object_id__in=object_ids)
        .order_by("object_id", "name")
        .values_list("object_id", "name", "value", "visibility", named=True)
    ):
        knowledge.attributes.setdefault(attr.object_id, {})[attr.name] = attr
    for row in AttributeAcl.objects.filter(object_id__in=object_ids).values_list(
        "object_id", "attribute_name", "entity_id"
    ):
        knowledge.acl.setdefault((row[0], row[1]), set()).add(row[2])
