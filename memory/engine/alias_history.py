"""Aliases in world time: what a viewer called someone at a moment of play.

omnia's file keeps only each entity's latest aliases. The only history there is, is what the
inspector saw change while it followed the game (an AliasChange stamped with the world's clock,
memory.worlds.live.apply); an imported save has none. So the aliases at a moment are the
current ones with every change seen after that moment undone, newest first. Edits made from
outside play (a page, the API, the admin) carry no world time and are never undone: they are
how the viewer's aliases read now, not something that happened in the story.

Pure but for `world_changes`, the one read of the stored history; times go through
memory.engine.clock.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from memory.active_save import scoped_rows
from memory.engine.aliases import UNFAMILIAR
from memory.engine.clock import is_untimed, parse_timestamp, said_at, time_key
from memory.engine.knowledge import Viewer
from memory.models import AliasChange


@dataclass(frozen=True)
class WorldChange:
    """One change the follower saw: the viewer's label for the target, before and after
    (None: no label), at `world_time` (a world timestamp)."""

    target_id: str
    before: str | None
    after: str | None
    world_time: str

    @property
    def key(self) -> str:
        return time_key(self.world_time)


def world_changes(viewer_id: str) -> list[WorldChange]:
    """The changes to the viewer's aliases the follower saw in play (the active save's), in
    the order they were recorded."""
    # Raw: every viewer page asks (its aliases panel), and the ORM built this statement in
    # longer than the database answered it. (world_time is never NULL: a default of "".)
    rows = scoped_rows(
        f'SELECT target_id, "before", "after", world_time FROM {AliasChange._meta.db_table} '
        "WHERE game_save_id = %(save)s AND viewer_id = %s AND world_time <> '' "
        "ORDER BY changed_at, id",
        [str(viewer_id)],
    )
    return [WorldChange(*row) for row in rows]


def viewer_at(viewer: Viewer, at_key: str, changes: Sequence[WorldChange]) -> Viewer:
    """The viewer as it went into the moment: its aliases as they stood then."""
    then = aliases_at(viewer.aliases, changes, at_key)
    if then == dict(viewer.aliases):
        return viewer
    return Viewer(id=viewer.id, aliases=then, obj=viewer.obj, aliases_error=viewer.aliases_error)


def in_play(changes: Iterable[WorldChange]) -> list[WorldChange]:
    """The changes that happened at a moment of play (a world time that names an instant),
    oldest first; the order they were given breaks ties."""
    timed = [c for c in changes if c.world_time and not is_untimed(c.world_time)]
    return sorted(timed, key=lambda c: c.key)


def aliases_at(
    current: Mapping[str, str], changes: Sequence[WorldChange], at_key: str
) -> dict[str, str]:
    """The aliases the viewer went into the moment `at_key` (a clock.time_key) with: the
    current ones with every change seen at that moment or later undone, newest first. A
    change seen at the very moment of a row is what that moment taught (omnia learns a name
    in the turn that says it), so the row itself still reads the label from before."""
    aliases = dict(current)
    for change in reversed(in_play(changes)):
        if change.key < at_key:
            break
        if change.before is None:
            aliases.pop(change.target_id, None)
        else:
            aliases[change.target_id] = change.before
    return aliases


def label_of(label: str | None) -> str:
    """A label as a person reads it: none is "an unfamiliar figure", as the lines say it."""
    return UNFAMILIAR if label is None else label


@dataclass(frozen=True)
class Step:
    """One stretch of play under one label: `label` until `until` (a world timestamp; None:
    still, to this day)."""

    label: str
    until: str | None

    @property
    def until_said(self) -> str | None:
        moment = parse_timestamp(self.until)
        return None if moment is None else said_at(moment)


def label_steps(current: str | None, changes: Sequence[WorldChange], target_id: str) -> list[Step]:
    """The labels the viewer used for `target_id` in play, oldest first: one step per label,
    each until the change that replaced it; a single step when nothing changed."""
    seen = [c for c in in_play(changes) if c.target_id == target_id]
    if not seen:
        return [Step(label_of(current), None)]
    steps = [Step(label_of(c.before), c.world_time) for c in seen]
    steps.append(Step(label_of(current), None))
    return steps


def steps_sentence(steps: Sequence[Step]) -> str:
    """ "called the hooded figure until Jul 6, 9:36 AM, then Gareth": the steps in words."""
    parts = []
    for step in steps:
        if step.until is None:
            parts.append(step.label)
        else:
            parts.append(f"{step.label} until {step.until_said or step.until}")
    return "called " + ", then ".join(parts)
