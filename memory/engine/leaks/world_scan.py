"""The leak scanner on the database (PRODUCT §7): every viewer's prompt context, scanned.

`memory.engine.leaks.scanner` is pure; this module feeds it one world from the store and runs it over the
text `memory.engine.prompt` renders for each viewer. It only reads.

What the world contributes, and why:
- System ids: every object of the world (the world itself, its locations, its entities) and
  every location id an object stands in, even without a row of its own: v1-era omnia worlds
  name places ("tavern-main") that no `objects` row describes, and those are ids all the same.
- True names: `WorldKnowledge.true_name` of every entity (the first of
  settings.OMNIA_TRUE_NAME_ATTRIBUTES it has).
- Alias maps: every entity's, parsed as the renderer parses them (a corrupt map knows nobody).
- Private values: every non-PUBLIC attribute of every object of the world, with its ACL.
- Ordinary words: ids of places (non-entity objects and bare location ids) that are one plain
  lowercase word ("cellar", "quay"). Prose names such places by the word itself ("descends the
  stairs to the cellar"), so flagging it would be a false alarm on every such line. Entity ids
  are never ordinary, even when they are words ("bob"): a person named by its id is exactly
  the leak upstream's data carries ("Bob greets Charlie"). An ordinary word is silent as an id
  only; if it is also someone's true name, the leaks module still judges that name.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from memory.engine.alias_history import WorldChange, viewer_at, world_changes
from memory.engine.aliases import AliasesJsonError, parse_aliases_json
from memory.engine.clock import time_key
from memory.engine.errors import NotFound
from memory.engine.knowledge import (
    AGENTS,
    Viewer,
    WorldKnowledge,
    get_viewer,
    load_attributes,
    viewer_of,
    world_knowledge,
    world_objects,
)
from memory.engine.leaks.allowed import allowed_words
from memory.engine.leaks.scanner import (
    Finding,
    LeakIndex,
    LeakWorld,
    PrivateValue,
    build_leak_index,
    scan_text,
    tag_findings,
)
from memory.engine.newest import chunks
from memory.engine.projections.doors import OwnerRows
from memory.engine.prompt import PromptContext, prompt_context, prompt_contexts
from memory.engine.visibility import PUBLIC
from memory.models import ObjectType, WorldObject

FINDING_KINDS = ("system_id", "unknown_name", "private_attribute", "raw_tag", "unresolved_tag")
FINDING_STATES = ("open", "accepted")
CSV_HEADER = (
    "world_id",
    "viewer_id",
    "section",
    "kind",
    "text",
    "count",
    "start",
    "end",
    "entity_id",
    "reason",
    "source_id",
    "context",
    "state",
    "accepted_reason",
)
# Characters of the finding's own line kept either side of it as its context snippet.
CONTEXT_CHARS = 60

_PLAIN_WORD = re.compile(r"[a-z]+")

Occurrence = tuple[int, int, str | None]  # start, end, the stored row its line came from


@dataclass(frozen=True)
class ScanFinding:
    """One distinct leak in one section of a viewer's prompt (issue 13 item 10): `finding` is
    its first occurrence, `occurrences` every one of them (offsets and source row), so a page
    can still highlight each while the report lists it once with a count."""

    viewer_id: str
    section: str
    finding: Finding
    occurrences: tuple[Occurrence, ...] = ()
    world_id: str | None = None
    context_before: str = ""
    context_after: str = ""

    @property
    def count(self) -> int:
        return len(self.occurrences) or 1

    @property
    def source_id(self) -> str | None:
        return self.occurrences[0][2] if self.occurrences else None

    @property
    def key(self) -> tuple[str, str, str, str]:
        """What an acceptance is kept by: it survives rescans while these are unchanged."""
        return (self.viewer_id, self.section, self.finding.kind, self.finding.text)

    def context(self) -> str:
        return f"{self.context_before}{self.finding.text}{self.context_after}"

    def to_dict(self) -> dict[str, object]:
        return {
            "world_id": self.world_id,
            "viewer_id": self.viewer_id,
            "section": self.section,
            **self.finding.to_dict(),
            "count": self.count,
            "source_id": self.source_id,
            "occurrences": [
                {"start": start, "end": end, "source_id": source}
                for start, end, source in self.occurrences
            ],
            "context_before": self.context_before,
            "context_after": self.context_after,
        }

    def csv_row(self, state: str = "open", accepted_reason: str = "") -> list[object]:
        f = self.finding
        return [
            self.world_id,
            self.viewer_id,
            self.section,
            f.kind,
            f.text,
            self.count,
            f.start,
            f.end,
            f.entity_id,
            f.reason,
            self.source_id,
            self.context(),
            state,
            accepted_reason,
        ]


def _context(text: str, start: int, end: int) -> tuple[str, str]:
    """The words around a finding on its own line, cut at CONTEXT_CHARS with an ellipsis."""
    line_start = text.rfind("\n", 0, start) + 1
    line_end = text.find("\n", end)
    line_end = len(text) if line_end < 0 else line_end
    before_at = max(line_start, start - CONTEXT_CHARS)
    after_at = min(line_end, end + CONTEXT_CHARS)
    before = ("…" if before_at > line_start else "") + text[before_at:start]
    after = text[end:after_at] + ("…" if after_at < line_end else "")
    return before, after


def group_findings(
    viewer_id: str, prompt: PromptContext, found: list[Finding], world_id: str | None = None
) -> list[ScanFinding]:
    """Occurrences of one leak (same section, kind, text, entity) folded into one finding,
    listed in the order of their first occurrence."""
    text = prompt.text
    groups: dict[tuple, list[Finding]] = {}
    sections: dict[tuple, str] = {}
    for f in found:
        section = prompt.section_at(f.start)
        key = (section, f.kind, f.text, f.entity_id, f.attribute_name)
        groups.setdefault(key, []).append(f)
        sections[key] = section
    out = []
    for key, members in groups.items():
        first = members[0]
        # A description only if every occurrence reads as one: one use as a name is a leak.
        described = all(m.likely_description for m in members)
        if first.likely_description != described:
            first = replace(first, likely_description=described)
        before, after = _context(text, first.start, first.end)
        out.append(
            ScanFinding(
                viewer_id,
                sections[key],
                first,
                tuple((m.start, m.end, prompt.source_at(m.start)) for m in members),
                world_id,
                before,
                after,
            )
        )
    return out


@dataclass(frozen=True)
class ViewerScan:
    viewer_id: str
    prompt: PromptContext
    findings: list[ScanFinding]

    def counts(self) -> dict[str, int]:
        found = Counter(f.finding.kind for f in self.findings)
        return {kind: found[kind] for kind in FINDING_KINDS}

    @property
    def flaws(self) -> int:
        """Where omnia's own lines in this prompt are wrong without leaking (issue 30)."""
        return sum(len(section.flaws) for section in self.prompt.sections)


def _aliases(obj: WorldObject) -> dict[str, str]:
    try:
        return parse_aliases_json(obj.aliases_json)
    except AliasesJsonError:
        return {}


def leak_world_from(
    knowledge: WorldKnowledge, aliases: Mapping[str, Mapping[str, str]] | None = None
) -> LeakWorld:
    """The world as the scanner reads it; with `aliases`, those viewers' alone (scan_text
    reads only the scanned viewer's, so a scan of their text needs no other's parsed)."""
    objects = knowledge.objects
    entities = [o for o in objects.values() if o.type == ObjectType.ENTITY]
    bare_locations = {o.location_id for o in objects.values() if o.location_id} - set(objects)
    true_names = {e.id: name for e in entities if (name := knowledge.true_name(e.id))}
    private_values = [
        PrivateValue(
            object_id=object_id,
            attribute_name=name,
            value=attr.value,
            allowed=frozenset(knowledge.acl.get((object_id, name), set())),
        )
        for object_id, attrs in sorted(knowledge.attributes.items())
        for name, attr in sorted(attrs.items())
        if attr.visibility != PUBLIC
    ]
    places = [o.id for o in objects.values() if o.type != ObjectType.ENTITY] + sorted(
        bare_locations
    )
    return LeakWorld(
        object_ids=frozenset(objects) | frozenset(bare_locations),
        true_names=true_names,
        aliases={e.id: _aliases(e) for e in entities} if aliases is None else dict(aliases),
        private_values=tuple(private_values),
        ordinary_words=frozenset(p for p in places if _PLAIN_WORD.fullmatch(p)),
        allowed=allowed_words(),
    )


def leak_world_for(world_id: str | None, aliases: Mapping[str, Mapping[str, str]]) -> LeakWorld:
    """What a scan of a few viewers' text needs of their world (every id, true name and
    private value; their aliases alone), read without a model instance per object."""
    rows = world_objects(world_id).values_list("id", "type", "location_id", named=True)
    knowledge = WorldKnowledge(world_id, {o.id: o for o in rows}, {}, {})
    load_attributes(knowledge, list(knowledge.objects))
    return leak_world_from(knowledge, aliases)


def _check_world(world_id: str) -> None:
    if not WorldObject.objects.filter(id=world_id, type=ObjectType.WORLD).exists():
        raise NotFound(f"no world with id {world_id!r}")


def leak_world(world_id: str) -> LeakWorld:
    _check_world(world_id)
    return leak_world_from(world_knowledge(world_id))


def scan_prompt(
    index: LeakIndex, viewer_id: str, prompt: PromptContext, world_id: str | None = None
) -> ViewerScan:
    # The prompt holds omnia's own lines (issue 30), so a tag its renderer left is in the text.
    found = sorted(
        scan_text(index, viewer_id, prompt.text)
        + tag_findings(prompt.text, index.world.object_ids),
        key=lambda f: (f.start, f.end),
    )
    findings = group_findings(viewer_id, prompt, found, world_id)
    return ViewerScan(viewer_id=viewer_id, prompt=prompt, findings=findings)


def scan_viewer(viewer_id: str, knowledge: WorldKnowledge | None = None) -> ViewerScan:
    """The viewer's prompt now and its leaks; `knowledge`: its world, when the caller read it."""
    viewer = get_viewer(viewer_id)
    knowledge = knowledge or world_knowledge(viewer.obj.world_id)
    index = build_leak_index(leak_world_from(knowledge))
    return scan_prompt(index, viewer.id, prompt_context(viewer, knowledge), viewer.obj.world_id)


def scan_viewer_at(
    viewer: Viewer,
    at: str,
    knowledge: WorldKnowledge | None = None,
    changes: Sequence[WorldChange] | None = None,
    *,
    rows: Mapping[str, OwnerRows] | None = None,
    indexes: dict[tuple, LeakIndex] | None = None,
    only: Collection[str] | None = None,
) -> ViewerScan:
    """The viewer's prompt as it stood at a moment (prompt.prompt_context's `at`) and its
    leaks, judged with the aliases the viewer had then. Never stored: the stored findings are
    of the prompt as it is now. A caller asking several moments hands in the viewer's `rows`
    (prompt_context's) and a dict of `indexes`, which keeps the leak index of each set of
    aliases the viewer held (built once, not once a moment: 45 ms each at 2,000 entities).
    `only`: the sections to build and scan (prompt_contexts' `only`); the others are left out."""
    knowledge = knowledge or world_knowledge(viewer.obj.world_id)
    changes = world_changes(viewer.id) if changes is None else changes
    then = viewer_at(viewer, time_key(at), changes)
    held = tuple(sorted(then.aliases.items()))
    index = indexes.get(held) if indexes is not None else None
    if index is None:
        index = build_leak_index(leak_world_from(knowledge, {viewer.id: then.aliases}))
        if indexes is not None:
            indexes[held] = index
    prompt = prompt_context(viewer, knowledge, at=at, rows=rows, only=only)
    return scan_prompt(index, viewer.id, prompt, viewer.obj.world_id)


def viewers_by_world(
    world_id: str | None, viewer_id: str | None
) -> dict[str | None, list[WorldObject]]:
    qs = WorldObject.objects.filter(type=ObjectType.ENTITY)
    if viewer_id is not None:
        viewer = get_viewer(viewer_id)  # NotFound for an unknown id
        qs = qs.filter(id=viewer.id)  # asked for by id: scanned even if it is no agent
    else:
        qs = qs.filter(AGENTS)  # unasked, only prompts omnia builds (knowledge.AGENTS)
    if world_id is not None:
        _check_world(world_id)
        qs = qs.filter(world_id=world_id)
    grouped: dict[str | None, list[WorldObject]] = {}
    for obj in qs.order_by("world_id", "id"):
        grouped.setdefault(obj.world_id, []).append(obj)
    return grouped


def scan_world(
    world_id: str | None = None,
    *,
    viewer_id: str | None = None,
    progress: Callable[[int], None] | None = None,
) -> list[ViewerScan]:
    """Scan the prompt of every viewer (of one world, of every world, or just one viewer).

    One knowledge load and one automaton per world serve all of its viewers. `progress` is
    called with 1 after each viewer, so a caller can drive a progress bar."""
    return scan_groups(viewers_by_world(world_id, viewer_id), progress)


# Viewers whose prompts are built together: their store reads share statements (a chunk per
# statement), and a chunk's prompts are what a scan holds at once.
PROMPT_CHUNK = 200

# A world's knowledge and leak index, read and built once however many viewers it scans.
WorldIndexes = dict[str | None, tuple[WorldKnowledge, LeakIndex]]


def scan_groups(
    groups: dict[str | None, list[WorldObject]],
    progress: Callable[[int], None] | None = None,
    worlds: WorldIndexes | None = None,
) -> list[ViewerScan]:
    """Scan these viewers, grouped by world: one knowledge load and one automaton per world
    (kept in `worlds` for the caller's next groups, when it hands one in), each chunk of
    viewers' prompts built with their store reads made together."""
    worlds = {} if worlds is None else worlds
    scans: list[ViewerScan] = []
    for group_world, objs in groups.items():
        if group_world not in worlds:
            knowledge = world_knowledge(group_world)
            worlds[group_world] = (knowledge, build_leak_index(leak_world_from(knowledge)))
        knowledge, index = worlds[group_world]
        for chunk in chunks(objs, PROMPT_CHUNK):
            viewers = [viewer_of(obj) for obj in chunk]
            for viewer, prompt in zip(viewers, prompt_contexts(viewers, knowledge), strict=True):
                scans.append(scan_prompt(index, viewer.id, prompt, group_world))
                if progress is not None:
                    progress(1)
    return scans


def count_viewers(world_id: str | None = None, *, viewer_id: str | None = None) -> int:
    return sum(len(v) for v in viewers_by_world(world_id, viewer_id).values())


def leak_counts(world_id: str) -> dict[str, dict[str, int]]:
    """Per viewer of the world, how many findings of each kind its prompt holds (zeros kept)."""
    return {scan.viewer_id: scan.counts() for scan in scan_world(world_id)}


def all_findings(scans: Iterable[ViewerScan]) -> list[ScanFinding]:
    return [finding for scan in scans for finding in scan.findings]
