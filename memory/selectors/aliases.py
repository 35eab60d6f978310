"""A viewer's alias table as the pages read it: one row per target (the label, its state, what
the viewer's lines print, a descriptor derived from what the viewer can see), the window of it
a page shows however crowded the world (alias_window), the API's pages of it (alias_page),
and the history of its edits."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import NamedTuple

from django.contrib.auth import get_user_model
from django.db import connection

from memory.active_save import among, as_instances, scoped_rows
from memory.engine.aliases import (
    UNFAMILIAR,
    alias_state,
    label_suspicions,
)
from memory.engine.descriptors import KnownIds, derive_descriptor, descriptor_words
from memory.engine.knowledge import (
    Viewer,
    WorldKnowledge,
    known_ids_among,
    load_attributes,
    name_owners,
    world_knowledge,
)
from memory.models import AliasChange, ObjectType, WorldObject


@dataclass(frozen=True)
class AliasRow:
    target_id: str
    label: str | None
    state: str  # "known" | "descriptor" | "unknown"
    true_name: str | None
    shown_as: str  # what the viewer's memories print for this target
    suggestion: str  # a descriptor derived from what the viewer can see
    in_world: bool
    # What to check about the stored label (aliases.label_suspicions), in words.
    suspicions: tuple[str, ...] = ()


def alias_targets(viewer: Viewer, knowledge: WorldKnowledge) -> list[str]:
    """Every entity of the viewer's world, then alias targets that are not in it."""
    targets = [e.id for e in knowledge.entities if e.id != viewer.id]
    targets += [t for t in viewer.aliases if t not in knowledge.objects and t != viewer.id]
    return targets


def alias_rows(
    viewer: Viewer,
    knowledge: WorldKnowledge | None = None,
    targets: list[str] | None = None,
    known: KnownIds | None = None,
) -> list[AliasRow]:
    """The alias table: one row per target (default: every alias_targets one, in its order).

    A page that shows only some targets passes them: a suggestion is derived from what the
    viewer can see of each target, and a 1,000-entity world should not pay for 900 unseen.
    `known` stands for the world's ids where `knowledge` holds only some objects.
    """
    knowledge = knowledge or world_knowledge(viewer.obj.world_id)
    rows = []
    targets = alias_targets(viewer, knowledge) if targets is None else targets
    if known is None:  # the knowledge holds the whole world: its true names are all here
        known = KnownIds.of(knowledge.objects)
        owners: dict[str, set[str]] = {}
        for object_id in knowledge.objects:
            if name := knowledge.true_name(object_id):
                owners.setdefault(name.strip(), set()).add(object_id)
    else:  # one read for the shown labels that are some entity's true name
        owners = name_owners(viewer.aliases[t] for t in targets if t in viewer.aliases)
    for target_id in targets:
        label = viewer.aliases.get(target_id)
        true_name = knowledge.true_name(target_id)
        rows.append(
            AliasRow(
                target_id=target_id,
                label=label,
                state=alias_state(label, true_name),
                true_name=true_name,
                shown_as=label if label is not None else UNFAMILIAR,
                suggestion=derive_descriptor(
                    knowledge.visible_attributes(viewer.id, target_id), known
                ),
                in_world=target_id in knowledge.objects,
                suspicions=label_suspicions(label, target_id, owners),
            )
        )
    return rows


@dataclass(frozen=True)
class AliasWindow:
    rows: list[AliasRow]
    total: int  # every alias_targets target, shown or not
    labelled: int = 0  # the targets the viewer has a label for (paged past `labels`)
    labels_from: int = 0  # where this page of them starts
    labels_next: int | None = None  # where the next page starts, if there is one


def alias_window(
    viewer: Viewer,
    *,
    pinned: Iterable[str] = (),
    show_all: bool = False,
    limit: int,
    strangers: int,
    labels: int | None = None,
    labels_from: int = 0,
) -> AliasWindow:
    """The alias rows a page shows: every target when there are at most `limit` (or
    `show_all`); past that, in alias_targets order, the labelled ones (`labels` of them from
    `labels_from` when given: a viewer who knows hundreds is read a page at a time), the
    `pinned` ones and, on the first page, the first `strangers` of the rest. Each query is
    bounded by the rows shown (and the viewer's labels), not by the world: the world's 2,000
    objects are counted, never read.
    """
    pinned = set(pinned)
    asked = [t for t in dict.fromkeys([*viewer.aliases, *pinned]) if t != viewer.id]
    # The first strangers are read with the rest on a first page that may show them.
    asked_of = _asked(viewer, asked, strangers if not (show_all or labels_from) else 0)
    kinds, entities_total = asked_of.kinds, asked_of.entities
    outside = _outside(viewer, kinds)
    in_world = max(entities_total - 1, 0)  # the viewer is one of them
    total = in_world + len(outside)
    # Labelled or pinned entities of the world, in id order (the database's, as kinds are read).
    named = [t for t, kind in kinds.items() if kind == ObjectType.ENTITY]
    labelled = [t for t in named if t in viewer.aliases]
    labelled_total = len(labelled) + len(outside)
    if show_all or total <= limit:
        shown_world = _alias_entity_ids(viewer)
        rows = _rows_shown(viewer, shown_world, outside)
        return AliasWindow(rows=rows, total=total, labelled=labelled_total)
    labels_next = None
    if labels is not None and (labels_from or labelled_total > labels):
        # This page of the labelled targets, in alias_targets order: the world's by id (in
        # the database's order, as `kinds` was read), then the labels of ids outside it.
        page = [*labelled, *outside][labels_from : labels_from + labels]
        if labels_from + labels < labelled_total:
            labels_next = labels_from + labels
        labelled = [t for t in page if t not in outside]
        outside = [t for t in outside if t in page]
    keep = set(labelled) | (pinned & set(named))
    # In id order, as `named` was read; strangers on the first page only (the later pages
    # page through labels).
    shown_world = [t for t in named if t in keep]
    more = max(min(limit - len(keep) - len(outside), strangers), 0) if not labels_from else 0
    if more:
        # The first strangers and the rows kept, in the database's order (as read together).
        chosen = set(asked_of.strangers[:more]) | keep
        shown_world = [t for t in asked_of.order if t in chosen]
    return AliasWindow(
        rows=_rows_shown(viewer, shown_world, outside),
        total=total,
        labelled=labelled_total,
        labels_from=labels_from,
        labels_next=labels_next,
    )


def alias_page(viewer: Viewer, *, offset: int, limit: int) -> AliasWindow:
    """`limit` alias rows from `offset`, in alias_targets order (the world's entities by id,
    then labels for ids outside it): the API's pages, each read in queries bounded by it."""
    asked_of = _asked(viewer, [t for t in viewer.aliases if t != viewer.id])
    kinds, entities_total = asked_of.kinds, asked_of.entities
    outside = _outside(viewer, kinds)
    in_world = max(entities_total - 1, 0)
    shown_world = _alias_entity_ids(viewer, offset, limit) if offset < in_world else []
    start = max(offset - in_world, 0)
    shown_outside = outside[start : start + limit - len(shown_world)]
    return AliasWindow(
        rows=_rows_shown(viewer, shown_world, shown_outside), total=in_world + len(outside)
    )


def _alias_entity_ids(viewer: Viewer, offset: int = 0, limit: int | None = None) -> list[str]:
    """The ids of the entities of the viewer's world but the viewer, in id order (`limit` of
    them from `offset`): the alias rows' targets when every one is shown, and the API's pages.
    Raw: such a read is hundreds of ids, and the ORM cost more than the read."""
    world = viewer.obj.world_id
    in_world = "" if world is None else "AND (id = %s OR world_id = %s) "
    page = "" if limit is None else f"LIMIT {int(limit)} OFFSET {int(offset)}"
    rows = scoped_rows(
        f"SELECT id FROM {WorldObject._meta.db_table} WHERE game_save_id = %(save)s "
        f"{in_world}AND type = %s AND id <> %s ORDER BY id {page}",
        [*([] if world is None else [world, world]), ObjectType.ENTITY.value, viewer.id],
    )
    return [i for (i,) in rows]


class _Asked(NamedTuple):
    kinds: dict[str, str]  # what each id asked is in the viewer's world (absent: not of it)
    entities: int  # the world's entities (every world's, for none)
    strangers: list[str]  # the first entities of the world not asked, the viewer left out
    order: list[str]  # every id read, in the database's order


def _asked(viewer: Viewer, ids: list[str], strangers: int = 0) -> _Asked:
    """What each of these ids is in the viewer's world, how many entities the world has and
    (`strangers`) the first that many of its entities neither asked nor the viewer, in one
    statement, every id in the database's order. By id alone, the world checked here: the OR
    of two indexes that `world_objects` is costs a lookup per row; the count reads the
    (world, type) index alone. The strangers are a short read of the world's entities in id
    order, past the ids asked (a viewer's page read its first ids and every labelled one,
    hundreds, to find ten)."""
    # Raw SQL: a viewer holds hundreds of labels, and the ORM prepared each id of the IN list
    # in Python, half of this read's time on every viewer page.
    world_id = viewer.obj.world_id
    asked, asked_params = among("id", ids)
    world = "" if world_id is None else " AND world_id = %s"
    sql = (
        f"SELECT id, type, world_id, NULL FROM objects WHERE game_save_id = %(save)s AND {asked} "
        "UNION ALL SELECT NULL, NULL, NULL, COUNT(*) FROM objects "
        f"WHERE game_save_id = %(save)s AND type = %s{world}"
    )
    params = [*asked_params, ObjectType.ENTITY.value, *([] if world_id is None else [world_id])]
    if strangers:  # (id, NULL, NULL, NULL): an id with no type is a stranger
        # (Its count column typed: PostgreSQL types a subquery's bare NULL as text.)
        in_world = "" if world_id is None else "(id = %s OR world_id = %s) AND "
        sql += (
            " UNION ALL SELECT * FROM (SELECT id, NULL, NULL, CAST(NULL AS BIGINT) FROM objects "
            f"WHERE game_save_id = %(save)s AND {in_world}type = %s AND id <> %s "
            f"AND NOT ({asked}) ORDER BY id LIMIT %s) s"
        )
        params += [*([] if world_id is None else [world_id, world_id])]
        params += [ObjectType.ENTITY.value, viewer.id, *asked_params, strangers]
    rows = scoped_rows(f"{sql} ORDER BY 1", params)
    kinds = {
        i: kind
        for i, kind, world, _n in rows
        if kind is not None and (world_id is None or world_id in (i, world))
    }
    return _Asked(
        kinds=kinds,
        entities=next(n for i, _k, _w, n in rows if i is None),
        strangers=[i for i, kind, _w, _n in rows if i is not None and kind is None],
        order=[i for i, _k, _w, _n in rows if i is not None],
    )


def _outside(viewer: Viewer, kinds: dict[str, str]) -> list[str]:
    """Labels for ids the world does not hold close the list (alias_targets); a label for
    one of its objects that is no entity names no target."""
    return [t for t in viewer.aliases if t not in kinds and t != viewer.id]


def _rows_shown(viewer: Viewer, shown_world: list[str], outside: list[str]) -> list[AliasRow]:
    """The rows of these targets, reading the attributes of these alone."""
    world_id = viewer.obj.world_id
    shown = shown_world + outside
    knowledge = WorldKnowledge(
        world_id=world_id,
        # Only the shown objects: `in_world` is asked of them alone, the ids by `known`.
        objects=dict.fromkeys([viewer.id, *shown_world]),
        attributes={},
        acl={},
    )
    load_attributes(knowledge, [viewer.id, *shown])
    # Of the world's ids, the descriptors need only those equal to a word they could use.
    words = set().union(
        *(descriptor_words(knowledge.visible_attributes(viewer.id, t)) for t in shown)
    )
    known = known_ids_among(world_id, words)
    return alias_rows(viewer, knowledge, targets=shown, known=known)


def alias_history(viewer_id: str, *, target_id: str | None = None, limit: int = 50) -> list:
    """The viewer's latest alias changes (of one target, if given), newest first, each with
    who made it (its `changed_by`: the account's id and name), in one statement. Raw: every
    viewer page's aliases panel asks, and the ORM built the statement and its join in longer
    than the database answered it."""
    user = get_user_model()
    names = [f.attname for f in AliasChange._meta.concrete_fields]
    columns = ", ".join(f"c.{AliasChange._meta.get_field(n).column}" for n in names)
    username = user._meta.get_field(user.USERNAME_FIELD)
    condition, params = "c.viewer_id = %s", [str(viewer_id)]
    if target_id:
        condition, params = f"{condition} AND c.target_id = %s", [*params, str(target_id)]
    rows = scoped_rows(
        f"SELECT {columns}, u.{username.column} FROM {AliasChange._meta.db_table} c "
        f"LEFT JOIN {user._meta.db_table} u ON u.{user._meta.pk.column} = c.changed_by_id "
        f"WHERE c.game_save_id = %(save)s AND {condition} "
        "ORDER BY c.changed_at DESC, c.id DESC LIMIT %s",
        [*params, limit],
    )
    changes = as_instances(AliasChange, names, [row[:-1] for row in rows])
    editor = [user._meta.pk.attname, username.attname]
    for change, row in zip(changes, rows, strict=True):
        found = change.changed_by_id is not None and row[-1] is not None
        change.changed_by = (
            user.from_db(connection.alias, editor, (change.changed_by_id, row[-1]))
            if found
            else None
        )
    return changes
