"""A pair over time: what one viewer remembers of one other entity, oldest first, each line as
the viewer read it then, and the viewer's label for the other as it changed in play (the page
and its JSON twin read this). Also the alias history in world time that the prompt at a moment
reads (memory.engine.alias_history)."""

from __future__ import annotations

from dataclasses import dataclass, replace

from memory.engine.alias_history import (
    Step,
    label_of,
    label_steps,
    steps_sentence,
    viewer_at,
    world_changes,
)
from memory.engine.buffer.rendered import RenderedEntry, render_line
from memory.engine.clock import time_key
from memory.engine.errors import InvalidInput, NotFound
from memory.engine.knowledge import Viewer
from memory.models import LiveFollow, ObjectType, WorldObject
from memory.selectors.buffer import buffer_page
from memory.selectors.events import buffer_events
from memory.selectors.viewers import display_names

PAIR_PAGE = 50


def followed() -> bool:
    """Whether the active save is a followed game (its alias history grows as play goes on);
    an imported one holds only the aliases its file ended with."""
    return LiveFollow.objects.exists()


IMPORTED_ALIASES = (
    "This save was imported, and a save file holds only the aliases it ended with: "
    "each moment is read with those, and no change of label over time can be shown."
)
FOLLOWED_ALIASES = (
    "This save follows a running game: a label changed at the world time the follower "
    "saw the game change it (changes before the follow began are not known)."
)


def history_note(is_followed: bool) -> str:
    """Where the aliases of a past moment come from, in words (the pages and their twins)."""
    return FOLLOWED_ALIASES if is_followed else IMPORTED_ALIASES


@dataclass(frozen=True)
class PairItem:
    entry: RenderedEntry  # the line as the viewer read it at the time
    event: str
    witness_count: int
    label: str  # what the viewer called the target at the time


@dataclass(frozen=True)
class PairView:
    viewer: Viewer
    target_id: str
    viewer_name: str
    target_name: str
    items: list[PairItem]
    steps: list[Step]  # the viewer's labels for the target in play, oldest first
    followed: bool
    newer: str | None  # the next page (later moments)
    older: str | None  # the page before (earlier moments)

    @property
    def sentence(self) -> str:
        return steps_sentence(self.steps)

    @property
    def history(self) -> str:
        return history_note(self.followed)

    @property
    def changed(self) -> bool:
        return len(self.steps) > 1


def pair_view(
    viewer: Viewer,
    target_id: str,
    *,
    after: str | None = None,
    before: str | None = None,
    limit: int = PAIR_PAGE,
) -> PairView:
    """The rows of the viewer's buffer whose moment has `target_id` as actor or target,
    oldest first, keyset-paged (BadCursor for a cursor not ours; NotFound for a target that
    is no entity of the save; InvalidInput for the viewer itself)."""
    if target_id == viewer.id:
        raise InvalidInput("a viewer and itself are no pair: pick someone else", field="target")
    if not WorldObject.objects.filter(id=target_id, type=ObjectType.ENTITY).exists():
        raise NotFound(f"no entity with id {target_id!r}", field="target")
    page = buffer_page(
        viewer, after=after, before=before, limit=limit, uses=target_id, oldest_first=True
    )
    changes = world_changes(viewer.id)
    refs = buffer_events(viewer, page.entries)
    items = []
    for entry in page.entries:
        as_then = viewer_at(viewer, time_key(entry.timestamp), changes)
        if as_then is not viewer and entry.line is not None:
            line, reason = render_line(
                entry.timestamp, entry.intent_json, entry.outcome_json, False, as_then
            )
            entry = replace(entry, line=line, undeliverable=reason)
        ref = refs[entry.id]
        label = label_of(as_then.aliases.get(target_id))
        items.append(PairItem(entry, ref.event, ref.witness_count, label))
    names = display_names([viewer.id, target_id])
    return PairView(
        viewer=viewer,
        target_id=target_id,
        viewer_name=names[viewer.id],
        target_name=names[target_id],
        items=items,
        steps=label_steps(viewer.aliases.get(target_id), changes, target_id),
        followed=followed(),
        newer=page.newer,
        older=page.older,
    )
