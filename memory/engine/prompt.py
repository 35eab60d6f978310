"""Prompt context: the text an NPC's LLM call would receive (seed 000, "Prompt Injection").

Built from the viewer's side only: attributes it may see, everyone else by its alias, itself
as "you", places by their descriptions. No id is ever written by this module; an id can reach
the prompt only inside stored text the world itself wrote, which the leak scanner reports.

Sections, in order: Current moment (clock, where you are), The world as you perceive it (the
world's name and visible attributes, ways out, you, then everyone standing in your location as
a nested list under your label for them), Long-term memory (memory.engine.longterm.reader's index, when that
module is present), Recent memories (the last BUFFER_LINES of your buffer), Sessions (the
doors' digest). Who stands here is decided by location only: with no location, nobody is.
Another entity's true-name attributes are never listed; a name reaches you only as your alias.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from memory.engine.aliases import resolve_alias
from memory.engine.buffer.rendered import BUFFER_FIELDS, render_entry
from memory.engine.clock import long_date, parse_timestamp, time_of_day
from memory.engine.knowledge import Viewer, WorldKnowledge, true_name_attributes, world_knowledge
from memory.engine.longterm.reader import index_entries
from memory.engine.projections.doors import digest
from memory.models import BufferEntry

BUFFER_LINES = 50
UNNAMED_PLACE = "a place you cannot name"


@dataclass(frozen=True)
class Section:
    name: str
    text: str
    # (start, end, row id) of each line that comes from one stored row, offsets into `text`:
    # the leak report links a finding to the memory row it was read from.
    sources: tuple[tuple[int, int, str], ...] = ()


def _lines_section(name: str, rows: list[tuple[str, str]], empty: str) -> Section:
    """A section of one line per stored row, remembering where each row's line stands."""
    if not rows:
        return Section(name, empty)
    sources, at = [], 0
    for row_id, line in rows:
        sources.append((at, at + len(line), row_id))
        at += len(line) + 1
    return Section(name, "\n".join(line for _row, line in rows), tuple(sources))


@dataclass(frozen=True)
class PromptContext:
    viewer_id: str
    sections: list[Section]

    @property
    def text(self) -> str:
        return "\n\n".join(f"## {s.name}\n{s.text}" for s in self.sections)

    def to_json(self) -> dict:
        return {
            "sections": [{"name": s.name, "text": s.text} for s in self.sections],
            "text": self.text,
        }

    def source_at(self, offset: int) -> str | None:
        """The id of the stored row whose line holds this character offset of `text`."""
        position = 0
        for section in self.sections:
            header = len(f"## {section.name}\n")
            length = header + len(section.text)
            if offset < position + length:
                inner = offset - position - header
                for start, end, row_id in section.sources:
                    if start <= inner < end:
                        return row_id
                return None
            position += length + 2
        return None

    def section_at(self, offset: int) -> str:
        """The name of the section a character offset of `text` falls in."""
        position = 0
        for section in self.sections:
            length = len(f"## {section.name}\n{section.text}")
            if offset < position + length:
                return section.name
            position += length + 2
        return self.sections[-1].name if self.sections else ""


def _format_clock(clock_iso: str | None) -> str:
    moment = parse_timestamp(clock_iso)
    if moment is None:
        return "The time is unknown."
    return f"It is {time_of_day(moment)} on {long_date(moment)}."


def _phrase(text: str) -> str:
    """A description as the object of "You are in ...": scenario files write sentences
    ("A pristine room. There are no doors."), which would read "in A pristine room..".
    Only a leading article is lowered, so a name ("The Rusty Flagon") keeps its capital
    wherever it is not the first word."""
    text = text.strip().rstrip(".").strip()
    first, _, rest = text.partition(" ")
    if rest and first in ("A", "An", "The"):
        text = f"{first.lower()} {rest}"
    return text


def place_name(knowledge: WorldKnowledge, viewer_id: str, location_id: str | None) -> str:
    if not location_id or location_id not in knowledge.objects:
        return UNNAMED_PLACE
    visible = knowledge.visible_attributes(viewer_id, location_id)
    return _phrase(visible.get("description") or visible.get("name") or "") or UNNAMED_PLACE


def _attribute_lines(attrs: dict[str, str], skip: set[str], indent: str = "") -> list[str]:
    return [
        f"{indent}- {name.replace('_', ' ')}: {value}"
        for name, value in attrs.items()
        if name not in skip
    ]


def current_moment(viewer: Viewer, knowledge: WorldKnowledge) -> Section:
    world = knowledge.objects.get(viewer.obj.world_id or "")
    lines = [_format_clock(world.clock_iso if world else None)]
    lines.append(f"You are in {place_name(knowledge, viewer.id, viewer.obj.location_id)}.")
    return Section("Current moment", "\n".join(lines))


def perceived_world(viewer: Viewer, knowledge: WorldKnowledge) -> Section:
    names = set(true_name_attributes())
    lines: list[str] = []
    world_id = viewer.obj.world_id
    if world_id and world_id in knowledge.objects:
        visible = knowledge.visible_attributes(viewer.id, world_id)
        world_attrs = _attribute_lines(visible, {"name", "description"})
        # A world's name is how its people speak of it, not a secret behind an alias.
        title = " ".join(
            visible[key].strip().rstrip(".") + "."
            for key in ("name", "description")
            if visible.get(key)
        )
        if title or world_attrs:
            lines.append(f"The world: {title}" if title else "The world:")
            lines += world_attrs
    here = viewer.obj.location_id
    location = knowledge.objects.get(here or "")
    if location is not None and location.connections_json:
        exits = _exits(location.connections_json, knowledge, viewer.id)
        if exits:
            lines.append("Ways out: " + "; ".join(exits) + ".")
    lines.append("You:")
    lines += _attribute_lines(knowledge.visible_attributes(viewer.id, viewer.id), set())
    present = [
        e for e in knowledge.entities if e.id != viewer.id and here and e.location_id == here
    ]
    if present:
        # One nested list: two strangers both read "an unfamiliar figure", and only what the
        # viewer sees of each under its label tells them apart.
        lines.append("Here with you:")
    for other in present:
        lines.append(f"- {resolve_alias(viewer, other.id)}")
        # A name is known only through the alias map, never read off an attribute.
        lines += _attribute_lines(knowledge.visible_attributes(viewer.id, other.id), names, "  ")
    if not present:
        lines.append("Nobody else is here.")
    return Section("The world as you perceive it", "\n".join(lines))


def _exits(connections_json: str, knowledge: WorldKnowledge, viewer_id: str) -> list[str]:
    try:
        connections = json.loads(connections_json)
    except ValueError:
        return []
    exits = []
    for connection in connections if isinstance(connections, list) else []:
        if not isinstance(connection, dict):
            continue
        portal = connection.get("portalName") or "a passage"
        state = connection.get("portalStateDescriptor")
        target = place_name(knowledge, viewer_id, connection.get("targetId"))
        exits.append(f"{portal}{f' ({state})' if state else ''} to {target}")
    return exits


def long_term_index(viewer: Viewer) -> Section:
    return _lines_section("Long-term memory", index_entries(viewer), "(no long-term memory)")


def recent_buffer(viewer: Viewer, limit: int = BUFFER_LINES) -> Section:
    newest = (
        BufferEntry.objects.filter(owner_id=viewer.id)
        .only(*BUFFER_FIELDS)
        .order_by("-timestamp", "-created_at", "-id")[:limit]
    )
    rendered = [render_entry(entry, viewer) for entry in newest]
    rows = [(r.id, r.line) for r in reversed(rendered) if r.line is not None]
    return _lines_section("Recent memories", rows, "(nothing yet)")


def session_digest(viewer: Viewer) -> Section:
    answer = digest(viewer.id)
    return Section("Sessions", "\n".join(answer.lines) if answer.lines else "(no sessions)")


def prompt_context(viewer: Viewer, knowledge: WorldKnowledge | None = None) -> PromptContext:
    knowledge = knowledge or world_knowledge(viewer.obj.world_id)
    return PromptContext(
        viewer_id=viewer.id,
        sections=[
            current_moment(viewer, knowledge),
            perceived_world(viewer, knowledge),
            long_term_index(viewer),
            recent_buffer(viewer),
            session_digest(viewer),
        ],
    )
