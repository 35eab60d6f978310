"""One entry of a viewer's buffer as its owner reads it, and what its line ties to in the
viewer page's other panels (its session, the aliases it prints)."""

from __future__ import annotations

from dataclasses import dataclass

from memory.engine.buffer.rendered import BUFFER_FIELDS, RenderedEntry, render_entry
from memory.engine.errors import NotFound
from memory.engine.knowledge import Viewer
from memory.engine.projections.sessions import session_key_of
from memory.models import BufferEntry
from memory.selectors.buffer import names_in


@dataclass(frozen=True)
class LineLinks:
    """What one buffer line ties to in the other panels: its session, the aliases it prints."""

    entry: RenderedEntry
    session_key: str
    alias_targets: tuple[str, ...]  # the entities named in it, the viewer itself left out


def line_links(viewer: Viewer, entry_id: str) -> LineLinks:
    entry = get_entry(viewer, entry_id)
    return LineLinks(
        entry=entry,
        session_key=session_key_of(entry.conversation_id, entry.location_id),
        alias_targets=tuple(i for i in names_in(entry) if i != viewer.id),
    )


def get_entry(viewer: Viewer, entry_id: str) -> RenderedEntry:
    entry = BufferEntry.objects.filter(id=entry_id, owner_id=viewer.id).only(*BUFFER_FIELDS).first()
    if entry is None:
        raise NotFound(f"{viewer.id} holds no memory with id {entry_id!r}", field="entry_id")
    return render_entry(entry, viewer)
