"""What both comparisons are made of: a save and an entity named by the caller (by id or by
name; NotFound or InvalidInput naming the field), names people read (a nameless entity by
its look), who is who across two saves, whether a save is folded, the alias diff, a
viewer's sessions."""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable

from memory.active_save import use
from memory.engine.aliases import GENERATED_ID, UNFAMILIAR
from memory.engine.clock import time_key
from memory.engine.compare.moments import Cast, words_of
from memory.engine.compare.results import AliasDiff, AliasItem, Named, SessionRef
from memory.engine.descriptors import derive_descriptor
from memory.engine.errors import InvalidInput, NotFound
from memory.engine.knowledge import true_name_attributes, true_names
from memory.engine.projections.cycle import run_cycle
from memory.engine.projections.worker import projection_status
from memory.engine.saves import get_save
from memory.engine.visibility import PUBLIC
from memory.models import Attribute, MemorySession, ObjectType, Save, WorldObject

# "Name (id)": how the form's list offers a name two people share.
_NAME_AND_ID = re.compile(r"^(?P<name>.*\S)\s+\((?P<id>[^()]+)\)$")
_CHUNK = 500


def save_named(name: str, field_name: str) -> Save:
    try:
        return get_save(name)
    except NotFound as exc:
        raise NotFound(str(exc), field=field_name) from None


def _entities(save: Save):
    return WorldObject.objects.in_save(save).filter(type=ObjectType.ENTITY)


def _words_of_id(object_id: str, otherwise: str) -> str:
    """A readable id said as words ("ale-barrel": "ale barrel"); a generated one never."""
    if GENERATED_ID.search(object_id):
        return otherwise
    return re.sub(r"[-_.:]+", " ", object_id).strip() or otherwise


def _looks(ids: list[str], entities: set[str]) -> dict[str, str]:
    """A name for each nameless object from what anyone can see of it: an entity by its
    look ("the bored armoured guard"), a place by its description; else a readable id said
    as words, else "someone unnamed" (an entity) or "somewhere unnamed"."""
    public: dict[str, dict[str, str]] = defaultdict(dict)
    for start in range(0, len(ids), _CHUNK):
        rows = Attribute.objects.filter(
            object_id__in=ids[start : start + _CHUNK], visibility=PUBLIC
        ).values_list("object_id", "name", "value")
        for object_id, name, value in rows:
            public[object_id][name] = value
    found = {}
    for object_id in ids:
        attrs = public.get(object_id, {})
        if object_id in entities:
            look = derive_descriptor(attrs)
            found[object_id] = (
                look if look != UNFAMILIAR else _words_of_id(object_id, "someone unnamed")
            )
        elif attrs.get("description", "").strip():
            text = attrs["description"].strip()
            found[object_id] = text if len(text) <= 60 else f"{text[:59]}…"
        else:
            found[object_id] = _words_of_id(object_id, "somewhere unnamed")
    return found


def true_names_in(save: Save, ids: Iterable[str]) -> dict[str, str]:
    wanted = sorted(set(ids))
    names: dict[str, str] = {}
    with use(save):
        for start in range(0, len(wanted), _CHUNK):
            names.update(true_names(wanted[start : start + _CHUNK]))
    return names


def names_in(save: Save, ids: Iterable[str]) -> dict[str, str]:
    """What a person reads for each of these objects (or ids no object holds): its true
    name, else what `_looks` makes of it; never a generated id."""
    wanted = sorted(set(ids))
    names = true_names_in(save, wanted)
    with use(save):
        nameless = [i for i in wanted if i not in names]
        entities = set()
        for start in range(0, len(nameless), _CHUNK):
            chunk = nameless[start : start + _CHUNK]
            entities.update(_entities(save).filter(id__in=chunk).values_list("id", flat=True))
        names.update(_looks(nameless, entities))
    return names


def _said_in(save: Save, text: str) -> list[WorldObject]:
    """Entities whose name (a true name, else their look) is `text`, in any case."""
    folded = text.casefold()
    with use(save):
        ids = set(
            Attribute.objects.filter(name__in=true_name_attributes(), value__iexact=text)
            .values_list("object_id", flat=True)
            .distinct()[:50]
        )
    found = [o for o in _entities(save).filter(id__in=ids) if o.id in ids]
    names = names_in(save, [o.id for o in found])
    found = [o for o in found if names.get(o.id, "").casefold() == folded]
    if found:
        return found
    everyone = list(_entities(save).order_by("id"))
    looks = names_in(save, [o.id for o in everyone])
    return [o for o in everyone if looks.get(o.id, "").casefold() == folded]


def entity(save: Save, said: str, field_name: str) -> WorldObject:
    """The entity a person named: by its id, its name or its look ("Alice", "the bored
    armoured guard"), or "name (id)" as the form's list offers a name two people share.
    NotFound when no one is called that; InvalidInput naming each one when several are."""
    by_id = _entities(save).filter(id=said).first()
    if by_id is not None:
        return by_id
    pair = _NAME_AND_ID.match(said)
    if pair:
        by_id = _entities(save).filter(id=pair["id"]).first()
        if by_id is not None:
            return by_id
    found = _said_in(save, said)
    if not found:
        raise NotFound(
            f"no one called {said!r} in save {save.name!r}: pick a name from the list",
            field=field_name,
        )
    if len(found) > 1:
        names = names_in(save, [o.id for o in found])
        each = ", ".join(f"{names.get(o.id, o.id)} ({o.id})" for o in found[:5])
        raise InvalidInput(
            f"{len(found)} people are called {said!r} in save {save.name!r}: {each}; "
            "pick one from the list",
            field=field_name,
        )
    return found[0]


def counterpart(b: Save, obj_a: WorldObject, name_a: str) -> WorldObject | None:
    """The entity of save B that is A's `obj_a`: the same id, else the one entity of B with
    the same name (a replay gives a nameless guard a new uuid, not a new look)."""
    same = _entities(b).filter(id=obj_a.id).first()
    if same is not None:
        return same
    found = _said_in(b, name_a)
    return found[0] if len(found) == 1 else None


def pair_people(names_a: dict[str, str], names_b: dict[str, str]) -> dict[str, str]:
    """A's entity ids to B's: the same id, else the same name held by one entity on each
    side (and by no entity of the other save under its own id)."""
    pairs = {i: i for i in names_a if i in names_b}
    alone_a = {i: n.casefold() for i, n in names_a.items() if i not in pairs}
    alone_b = {i: n.casefold() for i, n in names_b.items() if i not in names_a}
    by_name_b: dict[str, list[str]] = defaultdict(list)
    for i, n in alone_b.items():
        by_name_b[n].append(i)
    count_a: dict[str, int] = defaultdict(int)
    for n in alone_a.values():
        count_a[n] += 1
    for i, n in alone_a.items():
        if count_a[n] == 1 and len(by_name_b[n]) == 1:
            pairs[i] = by_name_b[n][0]
    return pairs


def cast_of(a: Save, b: Save, ids_a: list[str], ids_b: list[str], pairs: dict[str, str]) -> Cast:
    """Who is who in two saves' buffers: a person paired across them gets one key (A's id);
    the words of every id and true name are people, not what happened ("Bob attempts...")."""
    keys_b = {b: a for a, b in pairs.items()}
    names = [*true_names_in(a, ids_a).values(), *true_names_in(b, ids_b).values()]
    people = frozenset(w for n in names for w in words_of(n))
    ids = frozenset(w for i in (*ids_a, *ids_b) for w in words_of(i))
    return Cast(keys_a={}, keys_b=keys_b, words=people | ids)


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
