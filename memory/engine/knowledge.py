"""What a viewer is, and what one world holds that a viewer may see (seed 000 §1-§2).

A viewer is an entity with its parsed aliases. World knowledge is one world's objects,
attributes and ACLs, loaded in three queries; what a viewer may see of them is decided by
`memory.engine.visibility.can_see`, the one rule every reader (alias suggestions, prompt,
digest, leak scanner) goes through.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import NamedTuple

from django.conf import settings
from django.db import connection
from django.db.models import Q

from memory.active_save import among, scoped_instances, scoped_rows
from memory.engine.aliases import AliasesJsonError, parse_aliases_json
from memory.engine.descriptors import KnownIds
from memory.engine.errors import NotFound
from memory.engine.newest import chunks
from memory.engine.visibility import PUBLIC, can_see
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
    # Raw (scoped_instances): every viewer page, fragment and API twin reads its viewer here.
    found = scoped_instances(
        WorldObject, "id = %s AND type = %s", [str(viewer_id), ObjectType.ENTITY.value]
    )
    if not found:
        raise NotFound(f"no entity with id {viewer_id!r}", field="viewer_id")
    return viewer_of(found[0])


def resolve_viewer(viewer: str | Viewer) -> Viewer:
    """A viewer by id (read, NotFound if it is none), or one already read, passed on: a page
    reads its viewer once and hands it to every door it calls, which then need not look
    again (four lookups were a tenth of the viewer page)."""
    return viewer if isinstance(viewer, Viewer) else get_viewer(viewer)


def true_name_attributes() -> list[str]:
    return list(settings.OMNIA_TRUE_NAME_ATTRIBUTES)


# Ids a statement of true_names asks at most (a list of thousands is read in parts).
NAMES_ASKED_AT_ONCE = 500


def true_names(object_ids: list[str] | None) -> dict[str, str]:
    """The true name of each of these objects that has one (the first of the true-name
    attributes it carries), in one query bounded by the ids asked for; None: of every object
    of the save (one read without a list of ids, for a page that names thousands).

    Raw SQL: every page names through here, and the ORM prepared each id of the IN list in
    Python (50 ids: 0.91 against 0.52 ms on PostgreSQL, 0.39 against 0.08 on SQLite)."""
    order = true_name_attributes()
    names, named = among("name", order)
    sql = (
        f"SELECT object_id, name, value FROM {Attribute._meta.db_table} "
        f"WHERE game_save_id = %(save)s AND {names}"
    )
    if object_ids is None:
        asks = [(sql, named)]
    else:
        asks = [
            (f"{sql} AND {ids}", [*named, *params])
            for part in chunks(list(object_ids), NAMES_ASKED_AT_ONCE)
            for ids, params in [among("object_id", part)]
        ]
    found: dict[str, tuple[int, str]] = {}
    for ask, params in asks:
        for object_id, name, value in scoped_rows(ask, params):
            rank = order.index(name)
            if object_id not in found or rank < found[object_id][0]:
                found[object_id] = (rank, value)
    return {object_id: value for object_id, (_rank, value) in found.items()}


def every_name_owner() -> dict[str, set[str]]:
    """name_owners of every true name in the save, in one query: what a check of every label
    at once asks (a 2,000-entity world holds tens of thousands of distinct labels, and a query
    per 500 of them each read the attributes again)."""
    owners: dict[str, set[str]] = {}
    rows = Attribute.objects.filter(name__in=true_name_attributes()).values_list(
        "value", "object_id"
    )
    for value, object_id in rows:
        owners.setdefault(value, set()).add(object_id)
    return owners


def name_owners(labels: Iterable[str]) -> dict[str, set[str]]:
    """Which objects carry each of these labels (stripped) as a true name, in one query per
    NAMES_ASKED_AT_ONCE labels: a label equal to another entity's name is suspicious
    (aliases.label_suspicions). The match is exact, as omnia's lines would print the two
    alike. Raw SQL, as true_names is."""
    wanted = sorted({label.strip() for label in labels if label and label.strip()})
    names, named = among("name", true_name_attributes())
    owners: dict[str, set[str]] = {}
    for part in chunks(wanted, NAMES_ASKED_AT_ONCE):
        values, params = among("value", part)
        rows = scoped_rows(
            f"SELECT value, object_id FROM {Attribute._meta.db_table} "
            f"WHERE game_save_id = %(save)s AND {names} AND {values}",
            [*named, *params],
        )
        for value, object_id in rows:
            owners.setdefault(value, set()).add(object_id)
    return owners


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

    @cached_property
    def entities_at(self) -> dict[str, list[WorldObject]]:
        """The entities standing in each location, in `entities` order: a prompt asks who is
        here once per viewer, and a rescan of 2,000 viewers walked all 2,000 entities each."""
        at: dict[str, list[WorldObject]] = {}
        for entity in self.entities:
            if entity.location_id:
                at.setdefault(entity.location_id, []).append(entity)
        return at

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


def world_objects(world_id: str | None):
    """The objects of one world (the world itself among them), or of every world."""
    if world_id is None:
        return WorldObject.objects.all()
    return WorldObject.objects.filter(Q(id=world_id) | Q(world_id=world_id))


# Characters outside ASCII whose casefold is made only of what a descriptor word is made of
# ([a-z'-], `aliases._WORD`): the only way an id that is not ASCII casefolds to such a word
# (casefold maps one character at a time). Checked against every code point by a test.
# An entity that thinks: every one but those the save marks as no agent (is_agent = 0: a crate,
# a door; omnia builds it no prompt). Older omnia files do not say (NULL): those think. The
# viewers a page lists and the prompts a leak scan reads unasked are these.
AGENTS = ~Q(is_agent=0)


def agents_sql(table: str = "o") -> str:
    """The same condition in raw SQL, of the objects table named `table` ("": unnamed)."""
    column = f"{table}.is_agent" if table else "is_agent"
    return f"({column} IS NULL OR {column} <> 0)"


AGENTS_SQL = agents_sql("o")

FOLDS_TO_WORD = "\u00df\u017f\u1e9e\u212a\ufb00\ufb01\ufb02\ufb03\ufb04\ufb05\ufb06"
# Past this many words the one read of every id is cheaper than a condition per word.
KNOWN_WORDS_MAX = 500


# An id with a character outside ASCII: more bytes than characters (each database's words;
# SQLite's as its partial index idx_objects_not_ascii says it, which it uses only for that).
_NOT_ASCII = {
    "sqlite": "LENGTH(CAST(id AS BLOB)) <> LENGTH(id)",
    "postgresql": "OCTET_LENGTH(id) <> CHAR_LENGTH(id)",
}


def known_ids_among(world_id: str | None, words: Iterable[str]) -> KnownIds:
    """Of the world's ids, casefolded, those equal to one of these casefolded words: all that
    `derive_descriptor` asks of the world's ids for attributes made of these words, without
    reading a 2,000-object world into Python. SQL's lower() folds an ASCII id as casefold
    does; an id that is not ASCII (it may hold a FOLDS_TO_WORD character) is read too, and
    every id read is checked here. The world is checked here as well: a scan of the ids is
    cheaper than the OR of two indexes that `world_objects` costs for every row."""
    wanted = set(words)
    if not wanted:
        return KnownIds()
    if len(wanted) > KNOWN_WORDS_MAX:
        found = world_objects(world_id).values_list("id", flat=True)
    else:
        # Raw: the ORM took longer to build this than the database to answer it (0.46 against
        # 0.3 ms on SQLite), on every viewer page (its aliases panel).
        # Two index reads (migration 0029): the ids lowered to a word, and those not ASCII
        # (an id may be both: read twice, the same set either way).
        lowered, params = among("LOWER(id)", sorted(wanted))
        table = WorldObject._meta.db_table
        rows = scoped_rows(
            f"SELECT id, world_id FROM {table} "
            f"WHERE {lowered} AND game_save_id = %(save)s "
            f"UNION ALL SELECT id, world_id FROM {table} "
            f"WHERE game_save_id = %(save)s AND {_NOT_ASCII[connection.vendor]}",
            params,
        )
        found = [i for i, world in rows if world_id is None or world_id in (i, world)]
    return KnownIds(folded for i in found if (folded := i.casefold()) in wanted)


def world_knowledge(
    world_id: str | None, *, attributes_for: Iterable[str] | None = None
) -> WorldKnowledge:
    """One world's objects, with the attributes and ACLs of every object — or, with
    `attributes_for`, of those objects only, and each object's id and type alone (a panel
    showing a hundred targets of a 2,000-entity world should not read the other 1,900)."""
    objects = world_objects(world_id)
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


class AttributeRow(NamedTuple):
    """An attribute as the readers take it (knowledge.attributes' values)."""

    object_id: str
    name: str
    value: str
    visibility: str


# Object ids a statement of load_attributes asks at once: SQLite takes 32,766 parameters, and a
# world's objects (a few thousand) are one statement.
ATTRIBUTES_ASKED_AT_ONCE = 10_000


def load_attributes(knowledge: WorldKnowledge, object_ids: list[str]) -> None:
    """Add these objects' attributes and ACL rows to `knowledge` (at most two queries).

    Raw SQL, as true_names: the ORM prepared each id of the IN list in Python, and building
    the two statements took 1.9 ms of a viewer page (its aliases panel) on SQLite, whose
    database answered them in 0.1."""
    ids = sorted(set(object_ids))
    for part in chunks(ids, ATTRIBUTES_ASKED_AT_ONCE):
        objects, params = among("object_id", part)
        rows = scoped_rows(
            f"SELECT object_id, name, value, visibility FROM {Attribute._meta.db_table} "
            f"WHERE game_save_id = %(save)s AND {objects} ORDER BY object_id, name",
            params,
        )
        for attr in map(AttributeRow._make, rows):
            knowledge.attributes.setdefault(attr.object_id, {})[attr.name] = attr
    # An ACL row only ever widens who sees a non-PUBLIC attribute (`can_see` asks no more of
    # a PUBLIC one): read those of the objects that hold one, and none when none does.
    guarded = [
        object_id
        for object_id in ids
        if any(a.visibility != PUBLIC for a in knowledge.attributes.get(object_id, {}).values())
    ]
    for part in chunks(guarded, ATTRIBUTES_ASKED_AT_ONCE):
        objects, params = among("object_id", part)
        rows = scoped_rows(
            f"SELECT object_id, attribute_name, entity_id FROM {AttributeAcl._meta.db_table} "
            f"WHERE game_save_id = %(save)s AND {objects}",
            params,
        )
        for object_id, attribute_name, entity_id in rows:
            knowledge.acl.setdefault((object_id, attribute_name), set()).add(entity_id)
