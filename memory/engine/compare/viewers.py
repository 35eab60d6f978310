"""Two viewers in one save: whom each names and how, the private attributes the visibility
rule (`visibility.can_see`) lets one see and not the other, the sessions and the memories one
has and the other lacks."""

from __future__ import annotations

from memory.active_save import use
from memory.engine.compare.budget import Budget
from memory.engine.compare.merge import diff_buffers, matching_of
from memory.engine.compare.parts import (
    diff_aliases,
    entity,
    fold_or_say,
    named,
    names_in,
    save_named,
    session_refs,
    sessions_of,
)
from memory.engine.compare.results import AttributeItem, ViewersComparison
from memory.engine.errors import InvalidInput
from memory.engine.knowledge import viewer_of, world_knowledge
from memory.engine.visibility import PUBLIC
from memory.models import Save, WorldObject


def _private_visible(
    save: Save, a: WorldObject, b: WorldObject
) -> tuple[list[AttributeItem], list[AttributeItem], int]:
    world = a.world_id if a.world_id == b.world_id else None
    with use(save):
        knowledge = world_knowledge(world)
    names = names_in(save, knowledge.attributes)
    only_a, only_b, both = [], [], 0
    for object_id in sorted(knowledge.attributes):
        for name, attr in sorted(knowledge.attributes[object_id].items()):
            if attr.visibility == PUBLIC:
                continue
            sees_a, sees_b = knowledge.can_see(a.id, attr), knowledge.can_see(b.id, attr)
            item = AttributeItem(named(names, object_id), name, attr.value)
            if sees_a and not sees_b:
                only_a.append(item)
            elif sees_b and not sees_a:
                only_b.append(item)
            elif sees_a and sees_b:
                both += 1
    return only_a, only_b, both


def compare_viewers(
    save_name: str, viewer_a: str, viewer_b: str, *, budget: Budget | None = None
) -> ViewersComparison:
    """What viewer A knows that viewer B doesn't (and the reverse) in one save; the viewers
    by id or by name; a `budget` bounds the memories compared (a page, a time limit)."""
    budget = (budget or Budget.unbounded()).start()
    save = save_named(save_name, "save")
    obj_a, obj_b = entity(save, viewer_a, "a"), entity(save, viewer_b, "b")
    if obj_a.id == obj_b.id:
        raise InvalidInput("compare two different viewers", field="b")
    va, vb = viewer_of(obj_a), viewer_of(obj_b)
    names = names_in(save, [obj_a.id, obj_b.id, *va.aliases, *vb.aliases])
    notices: list[str] = []
    fold_or_say(save, fold=False, notices=notices)
    private_a, private_b, private_both = _private_visible(save, obj_a, obj_b)
    sessions_a, sessions_b = sessions_of(save, obj_a.id), sessions_of(save, obj_b.id)
    return ViewersComparison(
        save=save.name,
        viewer_a=named(names, obj_a.id),
        viewer_b=named(names, obj_b.id),
        # Each one's name for the other is not knowledge the other could share.
        aliases=diff_aliases(dict(va.aliases), dict(vb.aliases), names, skip=(obj_a.id, obj_b.id)),
        private_only_a=private_a,
        private_only_b=private_b,
        private_both=private_both,
        sessions_only_a=session_refs(
            save, [s for k, s in sessions_a.items() if k not in sessions_b]
        ),
        sessions_only_b=session_refs(
            save, [s for k, s in sessions_b.items() if k not in sessions_a]
        ),
        sessions_shared=sum(1 for k in sessions_a if k in sessions_b),
        memories=diff_buffers(
            save, va, save, vb, matching=matching_of(save, save, va.id, vb.id), budget=budget
        ),
        notices=notices,
    )
