"""Events as the pages read them: the moment once, then each witness's line, labels and leaks
(the event page and its JSON twin), the "seen by N" beside every buffer line, and the search
across a save (its page and twin)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field

from django.conf import settings

from memory.engine import event_search, events
from memory.engine.aliases import SELF, UNFAMILIAR
from memory.engine.buffer.rendered import BUFFER_FIELDS, RenderedEntry, render_entry
from memory.engine.buffer.v2 import entity_tag_ids
from memory.engine.cursor import encode_cursor
from memory.engine.knowledge import Viewer, true_names, viewer_of
from memory.engine.leaks.scanner import Finding, build_leak_index, scan_text
from memory.engine.leaks.world_scan import leak_world_for
from memory.models import BufferEntry, WorldObject
from memory.selectors.viewers import display_names


@dataclass(frozen=True)
class EventRef:
    event: str
    witness_count: int


def buffer_events(viewer: Viewer, entries: Sequence[RenderedEntry]) -> dict[str, EventRef]:
    """entry id -> its event and how many rows witness it, for one buffer page: one
    statement for the whole page (memory.engine.events.witness_counts)."""
    world = viewer.obj.world_id
    counts = events.witness_counts(world, [(e.timestamp, e.intent_json) for e in entries])
    out = {}
    for e in entries:
        event = events.event_id(world, e.timestamp, e.intent_json)
        out[e.id] = EventRef(event, counts.get(event, 0))
    return out


@dataclass(frozen=True)
class Person:
    id: str
    name: str  # the true name, else the id
    true_name: str | None

    @property
    def named(self) -> bool:
        return self.name != self.id


@dataclass(frozen=True)
class Label:
    """What one witness calls one participant, and what kind of word it is."""

    text: str
    # "self" (the witness itself), "true-name" (the participant's true name), "alias",
    # "unfamiliar" (no label: "an unfamiliar figure")
    kind: str


@dataclass
class Witness:
    viewer: Viewer
    name: str
    entry: RenderedEntry
    labels: dict[str, Label]  # participant id -> the label this witness uses
    leaks: list[Finding]
    # The buffer page that ends at this line (its `before` cursor): an old line is on no
    # newest page.
    buffer_cursor: str = ""
    location_name: str | None = None

    @property
    def outcome(self) -> str | None:
        return outcome_text(self.entry.outcome_json)


@dataclass
class ParticipantRow:
    person: Person
    cells: list[Label]  # one per witness, in witness order
    differs: bool  # witnesses (other than the participant) call them differently


@dataclass
class EventView:
    id: str
    timestamp: str
    world_id: str | None
    world_name: str | None
    kind: str | None
    places: list[str]  # the moment's place(s) by name, as the witnesses' rows give them
    actor: Person | None
    witnesses: list[Witness]
    participants: list[ParticipantRow] = field(default_factory=list)

    @property
    def knows_true_names(self) -> list[tuple[Witness, Person]]:
        """Who calls whom by the true name: what QA asks first."""
        return [
            (w, row.person)
            for row in self.participants
            for w, cell in zip(self.witnesses, row.cells, strict=True)
            if cell.kind == "true-name"
        ]


def outcome_text(raw: str | None) -> str | None:
    """An outcome as a person reads it: "succeeded: it was unlocked", else its JSON."""
    if not raw:
        return None
    try:
        outcome = json.loads(raw)
    except ValueError:
        return raw
    if isinstance(outcome, dict) and isinstance(outcome.get("isValid"), bool):
        verdict = "succeeded" if outcome["isValid"] else "failed"
        reason = outcome.get("reason")
        return f"{verdict}: {reason}" if isinstance(reason, str) and reason else verdict
    return json.dumps(outcome, ensure_ascii=False)


def participant_ids(entry: RenderedEntry) -> list[str]:
    """Everyone a moment's intent names: its actor, its targets, anyone its content tags."""
    ids = [entry.actor_id or "", *entry.target_ids]
    try:
        content = json.loads(entry.intent_json).get("content")
    except (ValueError, AttributeError, TypeError, RecursionError):
        content = None
    if isinstance(content, str):
        ids += entity_tag_ids(content)
    return [i for i in dict.fromkeys(ids) if i]


def _label(viewer: Viewer, person: Person) -> Label:
    if person.id == viewer.id:
        return Label(SELF, "self")
    text = viewer.aliases.get(person.id)
    if text is None:
        return Label(UNFAMILIAR, "unfamiliar")
    if person.true_name and text.strip().casefold() == person.true_name.strip().casefold():
        return Label(text, "true-name")
    return Label(text, "alias")


def _people(ids: list[str]) -> dict[str, Person]:
    """Each id as a page names it (selectors.viewers.display_names: the true name, else the
    id), with the true name alone beside it."""
    truths = true_names(ids)
    return {i: Person(i, truths.get(i) or i, truths.get(i)) for i in ids}


def event_view(event: str) -> EventView:
    """One event: its witnesses' rows rendered each as its owner reads it (NotFound for an
    id that names no event of the active save)."""
    rows = events.witnesses_of(event)
    owners = {
        o.id: viewer_of(o) for o in WorldObject.objects.filter(id__in=[r.owner_id for r in rows])
    }
    stored = {
        e.id: e
        for e in BufferEntry.objects.filter(id__in=[r.entry_id for r in rows]).only(*BUFFER_FIELDS)
    }
    world_id = rows[0].world_id
    rendered = [
        (owners.get(r.owner_id) or Viewer.of(r.owner_id, {}), stored[r.entry_id])
        for r in rows
        if r.entry_id in stored
    ]
    entries = [(v, render_entry(e, v)) for v, e in rendered]
    # The world's names, ids and private values, and the witnesses' own aliases: what the
    # scanner reads for their lines (not every viewer's, which a 2,000-entity world makes slow).
    index = build_leak_index(leak_world_for(world_id, {v.id: v.aliases for v, _e in entries}))
    first = entries[0][1]
    pids = participant_ids(first)
    locations = [e.location_id for _v, e in entries if e.location_id]
    people = _people(list(dict.fromkeys([*pids, *[v.id for v, _ in entries], *locations])))
    names = {i: p.name for i, p in people.items()}
    witnesses = [
        Witness(
            viewer=v,
            name=names[v.id],
            entry=e,
            labels={pid: _label(v, people[pid]) for pid in pids},
            leaks=scan_text(index, v.id, e.line) if e.line is not None else [],
            buffer_cursor=encode_cursor([e.timestamp, e.created_at + 1, e.id]),
            location_name=names.get(e.location_id or ""),
        )
        for v, e in entries
    ]
    witnesses.sort(key=lambda w: (w.name.casefold(), w.viewer.id, w.entry.id))
    participants = []
    for pid in pids:
        cells = [w.labels[pid] for w in witnesses]
        others = {c.text for w, c in zip(witnesses, cells, strict=True) if w.viewer.id != pid}
        participants.append(ParticipantRow(people[pid], cells, differs=len(others) > 1))
    return EventView(
        id=event,
        timestamp=first.timestamp,
        world_id=world_id,
        world_name=true_names([world_id]).get(world_id, world_id) if world_id else None,
        kind=first.type,
        places=list(dict.fromkeys(names[loc] for loc in locations)),
        actor=people.get(first.actor_id or ""),
        witnesses=witnesses,
        participants=participants,
    )


@dataclass
class SearchResults:
    page: event_search.SearchPage
    names: dict[str, str]  # viewer id -> how the page names it


def search(q: str | None, *, before: str | None = None, limit: int = 20) -> SearchResults:
    """One page of the save's events matching `q`, newest first, with each witness's name
    (BadCursor for a `before` not ours)."""
    page = event_search.search_events(
        q, before=before, limit=limit, seconds=settings.OMNIA_BUFFER_SCAN_SECONDS
    )
    ids = [w.viewer_id for e in page.events for w in e.witnesses]
    return SearchResults(page, display_names(ids))
