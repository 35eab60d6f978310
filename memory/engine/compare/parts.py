"""What both comparisons are made of: a save and an entity named by the caller (NotFound
naming the field), true names, whether a save is folded, the alias diff, a viewer's sessions."""

from __future__ import annotations

from collections.abc import Iterable

from memory.active_save import use
from memory.engine.clock import time_key
from memory.engine.compare.results import AliasDiff, AliasItem, Named, SessionRef
from memory.engine.errors import NotFound
from memory.engine.knowledge import true_names
from memory.engine.projections.cycle import run_cycle
from memory.engine.projections.worker import projection_status
from memory.engine.saves import get_save
from memory.models import MemorySession, ObjectType, Save, WorldObject


def save_named(name: str, field_name: str) -> Save:
    try:
        return get_save(name)
    except NotFound as exc:
        raise NotFound(str(exc), field=field_name) from None


def entity(save: Save, viewer_id: str, field_name: str) -> WorldObject:
    obj = WorldObject.objects.in_save(save).filter(id=viewer_id, type=ObjectType.ENTITY).first()
    if obj is None:
        raise NotFound(f"no entity with id {viewer_id!r} in save {save.name!r}", field=field_name)
    return obj


def names_in(save: Save, ids: Iterable[str]) -> dict[str, str]:
    with use(save):
        return true_names(sorted(set(ids)))


def named(names: dict[str, str], object_id: str) -> Named:
    return Named(id=object_id, name=names.get(object_id, object_id))


def _lag(save: Save) -> int:
    with use(save):
        return int(projection_status()["lag_rows"])


def fold_or_say(save: Save, *, fold: bool, notices: list[str]) -> bool:
    """True when the save's projections are up to date (folding them first if asked)."""
    lag = _lag(save)
    if lag and fold:
        with use(save):
            run_cycle()
        lag = _lag(save)
    if lag:
        notices.append(
            f"save {save.name!r} has {lag} row(s) not folded yet: sessions and episodes are "
            "not compared (run `manage.py run_projections --save "
            f"{save.name}`, or compare with --fold)"
        )
    return lag == 0


def diff_aliases(
    aliases_a: dict[str, str], aliases_b: dict[str, str], names: dict[str, str], *, skip=()
) -> AliasDiff:
    diff = AliasDiff()
    for target in sorted(set(aliases_a) | set(aliases_b)):
        if target in skip:
            continue
        item = AliasItem(named(names, target), aliases_a.get(target), aliases_b.get(target))
        if target not in aliases_b:
            diff.only_a.append(item)
        elif target not in aliases_a:
            diff.only_b.append(item)
        elif item.a != item.b:
            diff.changed.append(item)
        else:
            diff.same.append(item)
    return diff


def session_kind(session_key: str) -> str:
    return "scene" if session_key.startswith("scene:") else "conversation"


def sessions_of(save: Save, owner_id: str) -> dict[str, MemorySession]:
    rows = MemorySession.objects.in_save(save).filter(owner_id=owner_id)
    return {s.session_key: s for s in rows.order_by("last_key", "session_key")}


def session_refs(save: Save, rows: list[MemorySession]) -> list[SessionRef]:
    places = {
        s.session_key: s.session_key.removeprefix("scene:") or None
        for s in rows
        if session_kind(s.session_key) == "scene"
    }
    names = names_in(save, [p for p in places.values() if p])
    return [
        SessionRef(
            session_key=s.session_key,
            kind=session_kind(s.session_key),
            place=named(names, places[s.session_key]) if places.get(s.session_key) else None,
            first_at=s.first_at,
            last_at=s.last_at,
            memory_count=int(s.memory_count),
        )
        for s in sorted(rows, key=lambda s: (time_key(s.first_at), s.session_key))
    ]
