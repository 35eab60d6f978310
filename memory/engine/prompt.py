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
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from memory.engine.alias_history import viewer_at, world_changes
from memory.engine.aliases import resolve_alias
from memory.engine.buffer.flaws import TAG_FLAWS, Flaw, line_flaws
from memory.engine.buffer.rendered import render_readings
from memory.engine.clock import long_date, parse_timestamp, time_key, time_of_day
from memory.engine.knowledge import Viewer, WorldKnowledge, true_name_attributes, world_knowledge
from memory.engine.longterm.reader import index_entries_of_each
from memory.engine.newest import first_rows_of_each
from memory.engine.projections.doors import OwnerRows, digest_at, digests

BUFFER_LINES = 50
UNNAMED_PLACE = "a place you cannot name"

# The sections' names, in the order a prompt holds them.
CURRENT_MOMENT = "Current moment"
PERCEIVED_WORLD = "The world as you perceive it"
LONG_TERM = "Long-term memory"
RECENT = "Recent memories"
SESSIONS = "Sessions"
SECTION_NAMES = (CURRENT_MOMENT, PERCEIVED_WORLD, LONG_TERM, RECENT, SESSIONS)


@dataclass(frozen=True)
class Section:
    name: str
    text: str
    # (start, end, row id) of each line that comes from one stored row, offsets into `text`:
    # the leak report links a finding to the memory row it was read from.
    sources: tuple[tuple[int, int, str], ...] = ()
    # (line start, flaw, row id) of each grammar flaw of omnia's lines here (issue 30): the
    # quieter list beside the leaks. Raw tags are not here: the leak scanner finds them.
    flaws: tuple[tuple[int, Flaw, str], ...] = ()


def _lines_section(
    name: str,
    rows: list[tuple[str, str]],
    empty: str,
    flaws: dict[str, tuple[Flaw, ...]] | None = None,
) -> Section:
    """A section of one line per stored row, remembering where each row's line stands (and,
    given them, the flaws of each row's line)."""
    if not rows:
        return Section(name, empty)
    sources, found, at = [], [], 0
    for row_id, line in rows:
        sources.append((at, at + len(line), row_id))
        for flaw in (flaws or {}).get(row_id, ()):
            found.append((at, flaw, row_id))
        at += len(line) + 1
    return Section(name, "\n".join(line for _row, line in rows), tuple(sources), tuple(found))


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

    def flaws(self) -> list[dict[str, object]]:
        """The grammar flaws of omnia's lines in this prompt, offsets into `text`, each with
        its whole line (what the page shows with the flaw marked)."""
        out: list[dict[str, object]] = []
        position = 0
        for section in self.sections:
            header = len(f"## {section.name}\n")
            for line_start, flaw, row_id in section.flaws:
                line_end = section.text.find("\n", line_start)
                line = section.text[line_start : None if line_end < 0 else line_end]
                out.append(
                    {
                        **flaw.to_dict(),
                        "section": section.name,
                        "source_id": row_id,
                        "line": line,
                        "line_offset": position + header + line_start,
                    }
                )
            position += header + len(section.text) + 2
        return out

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


def current_moment(viewer: Viewer, knowledge: WorldKnowledge, at: str | None = None) -> Section:
    world = knowledge.objects.get(viewer.obj.world_id or "")
    lines = [_format_clock(at if at is not None else world.clock_iso if world else None)]
    lines.append(f"You are in {place_name(knowledge, viewer.id, viewer.obj.location_id)}.")
    return Section(CURRENT_MOMENT, "\n".join(lines))


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
    present = [e for e in knowledge.entities_at.get(here or "", ()) if e.id != viewer.id]
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
    return Section(PERCEIVED_WORLD, "\n".join(lines))


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


def long_term_indexes(viewers: Sequence[Viewer], at: str | None = None) -> dict[str, Section]:
    entries = index_entries_of_each(viewers, at)
    return {
        v.id: _lines_section(LONG_TERM, entries[v.id], "(no long-term memory)") for v in viewers
    }


_RECENT_COLUMNS = ("id", "timestamp", "created_at", "intent_json", "outcome_json", "untimed")
_RECENT_ORDER = (("timestamp", True), ("created_at", True), ("id", True))


def recent_buffers(
    viewers: Sequence[Viewer], limit: int = BUFFER_LINES, at: str | None = None
) -> dict[str, Section]:
    """Each viewer's newest `limit` rows (of `at` or before, when given), oldest first, as it
    reads them: one statement per chunk of viewers, each viewer's part the seek of its time
    index a read of it alone is."""
    newest = first_rows_of_each(
        "buffer_entries",
        "owner_id",
        [v.id for v in viewers],
        _RECENT_COLUMNS,
        _RECENT_ORDER,
        limit,
        until=("timestamp", at) if at is not None else None,
    )
    sections = {}
    for viewer in viewers:
        rows, flaws = [], {}
        for row_id, timestamp, _created, intent_json, outcome_json, untimed in reversed(
            newest[viewer.id]
        ):
            # omnia's own line: what its prompt builder really put here (issue 30).
            line, corrected, _reason = render_readings(
                timestamp, intent_json, outcome_json, untimed, viewer
            )
            if line is None:
                continue
            rows.append((row_id, line))
            if corrected is not line:  # only a v2 line can be read wrongly by omnia
                quiet = tuple(f for f in line_flaws(line, corrected) if f.kind not in TAG_FLAWS)
                if quiet:
                    flaws[row_id] = quiet
        sections[viewer.id] = _lines_section(RECENT, rows, "(nothing yet)", flaws)
    return sections


def session_digests(
    viewers: Sequence[Viewer],
    at: str | None = None,
    rows: Mapping[str, OwnerRows] | None = None,
) -> dict[str, Section]:
    if at is None:
        answers = digests(viewers)
    else:  # the stored sessions hold their latest terms only: folded again up to the moment
        rows = rows or {}
        answers = {v.id: digest_at(v.id, time_key(at), rows=rows.get(v.id)) for v in viewers}
    return {
        v.id: Section(
            SESSIONS, "\n".join(answers[v.id].lines) if answers[v.id].lines else "(no sessions)"
        )
        for v in viewers
    }


def prompt_contexts(
    viewers: Sequence[Viewer],
    knowledge: WorldKnowledge | None = None,
    *,
    at: str | None = None,
    rows: Mapping[str, OwnerRows] | None = None,
    only: Collection[str] | None = None,
) -> list[PromptContext]:
    """The prompt context of each viewer, in order, every store read made for all of them at
    once (a statement per chunk of viewers, not one per viewer): the leak rescan builds
    thousands. `knowledge` is the world of every viewer given (read per world when None).
    A single prompt is this with one viewer, so the two cannot differ.

    `at` (a world time in omnia's form, clock.world_time_at): the context the call would have
    received at that moment: the clock at it, the buffer, sessions and long-term entries of
    rows written at or before it, and each viewer's aliases as the follower last saw them
    before it (memory.engine.alias_history). Where people stand and what the world's
    attributes say are kept only as they are now: the file keeps no history of them.
    `rows`: viewer -> its rows (owner_rows), read once by a caller asking several moments.
    `only`: the names of the sections to build, the others left out (a caller looking for one
    section's leak at many moments: a section's text never depends on another's, and the
    Sessions section at a moment folds every row of the viewer again).
    """
    if at is not None:
        moment = time_key(at)
        viewers = [viewer_at(v, moment, world_changes(v.id)) for v in viewers]
    worlds: dict[str | None, WorldKnowledge] = {}
    for viewer in viewers:
        world_id = viewer.obj.world_id
        if world_id not in worlds:
            worlds[world_id] = knowledge or world_knowledge(world_id)
    wanted = set(SECTION_NAMES if only is None else only)
    # Each viewer's part of the three sections read from the store (viewer id -> Section).
    read = {
        LONG_TERM: long_term_indexes(viewers, at) if LONG_TERM in wanted else {},
        RECENT: recent_buffers(viewers, at=at) if RECENT in wanted else {},
        SESSIONS: session_digests(viewers, at, rows) if SESSIONS in wanted else {},
    }
    contexts = []
    for viewer in viewers:
        known = worlds[viewer.obj.world_id]
        sections = []
        if CURRENT_MOMENT in wanted:
            sections.append(current_moment(viewer, known, at))
        if PERCEIVED_WORLD in wanted:
            sections.append(perceived_world(viewer, known))
        sections += [read[name][viewer.id] for name in (LONG_TERM, RECENT, SESSIONS) if read[name]]
        contexts.append(PromptContext(viewer_id=viewer.id, sections=sections))
    return contexts


def prompt_context(
    viewer: Viewer,
    knowledge: WorldKnowledge | None = None,
    *,
    at: str | None = None,
    rows: Mapping[str, OwnerRows] | None = None,
    only: Collection[str] | None = None,
) -> PromptContext:
    return prompt_contexts([viewer], knowledge, at=at, rows=rows, only=only)[0]
