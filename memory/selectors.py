"""Reads shared by pages, their JSON twins and the CLI, so none of them can drift.

Nothing here writes: opening a page must never change the store.
"""

from __future__ import annotations

import base64
import json
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field

from django.conf import settings
from django.db.models import Q

from memory.aliases import (
    UNFAMILIAR,
    AliasesJsonError,
    KnownIds,
    ViewerView,
    alias_state,
    derive_descriptor,
    parse_aliases_json,
)
from memory.buffer import Undeliverable, render_stored_entry
from memory.models import Attribute, AttributeAcl, BufferEntry, ObjectType, WorldObject


class NotFound(LookupError):
    """An id that names nothing the inspector holds."""


class BadCursor(ValueError):
    pass


# --- viewers and what they can see ----------------------------------------------------------


@dataclass(frozen=True)
class Viewer:
    obj: WorldObject
    view: ViewerView
    aliases_error: str | None = None

    @property
    def id(self) -> str:
        return self.obj.id

    @property
    def aliases(self):
        return self.view.aliases


def viewer_of(obj: WorldObject) -> Viewer:
    try:
        aliases = parse_aliases_json(obj.aliases_json)
        error = None
    except AliasesJsonError as exc:
        # A corrupt row still renders: as someone who knows nobody, with the reason shown.
        aliases, error = {}, str(exc)
    return Viewer(obj=obj, view=ViewerView(id=obj.id, aliases=aliases), aliases_error=error)


def get_viewer(viewer_id: str) -> Viewer:
    obj = WorldObject.objects.filter(pk=viewer_id, type=ObjectType.ENTITY).first()
    if obj is None:
        raise NotFound(f"no entity with id {viewer_id!r}")
    return viewer_of(obj)


def _entities(world_id: str | None):
    qs = WorldObject.objects.filter(type=ObjectType.ENTITY)
    return qs.filter(world_id=world_id) if world_id else qs


def list_viewers(*, world_id: str | None = None, q: str | None = None) -> list[WorldObject]:
    qs = _entities(world_id)
    if q:
        qs = qs.filter(Q(id__icontains=q) | Q(attributes__value__icontains=q)).distinct()
    return list(qs.order_by("world_id", "id"))


def viewer_ids(world_id: str | None) -> list[str]:
    """Ids of the entities of one world (or of every world), in id order: ids only, cheap
    enough for a 1,000-entity switcher to slice from."""
    return list(_entities(world_id).order_by("id").values_list("id", flat=True))


def list_worlds() -> list[WorldObject]:
    return list(WorldObject.objects.filter(type=ObjectType.WORLD).order_by("id"))


def true_name_attributes() -> list[str]:
    return list(settings.OMNIA_TRUE_NAME_ATTRIBUTES)


@dataclass
class WorldKnowledge:
    """One world's objects, attributes and ACLs, loaded in three queries."""

    world_id: str | None
    objects: dict[str, WorldObject]
    attributes: dict[str, dict[str, Attribute]]
    acl: dict[tuple[str, str], set[str]]

    @property
    def entities(self) -> list[WorldObject]:
        return [o for o in self.objects.values() if o.type == ObjectType.ENTITY]

    def true_name(self, object_id: str) -> str | None:
        attrs = self.attributes.get(object_id, {})
        for name in true_name_attributes():
            if name in attrs:
                return attrs[name].value
        return None

    def can_see(self, viewer_id: str, attr: Attribute) -> bool:
        if attr.visibility == "PUBLIC" or attr.object_id == viewer_id:
            return True
        return viewer_id in self.acl.get((attr.object_id, attr.name), set())

    def visible_attributes(self, viewer_id: str, object_id: str) -> dict[str, str]:
        return {
            name: attr.value
            for name, attr in self.attributes.get(object_id, {}).items()
            if self.can_see(viewer_id, attr)
        }


def world_knowledge(world_id: str | None) -> WorldKnowledge:
    objects = WorldObject.objects.all() if world_id is None else WorldObject.objects.filter(
        Q(pk=world_id) | Q(world_id=world_id)
    )
    by_id = {o.id: o for o in objects.order_by("id")}
    attributes: dict[str, dict[str, Attribute]] = defaultdict(dict)
    # Named rows, not model instances: the same fields to read, at a fraction of the cost
    # for a world of thousands of attributes.
    for attr in (
        Attribute.objects.filter(object_id__in=list(by_id))
        .order_by("object_id", "name")
        .values_list("object_id", "name", "value", "visibility", named=True)
    ):
        attributes[attr.object_id][attr.name] = attr
    acl: dict[tuple[str, str], set[str]] = defaultdict(set)
    for row in AttributeAcl.objects.filter(object_id__in=list(by_id)).values_list(
        "object_id", "attribute_name", "entity_id"
    ):
        acl[(row[0], row[1])].add(row[2])
    return WorldKnowledge(world_id=world_id, objects=by_id, attributes=dict(attributes), acl=dict(acl))


@dataclass(frozen=True)
class AliasRow:
    target_id: str
    label: str | None
    state: str  # "known" | "descriptor" | "unknown"
    true_name: str | None
    shown_as: str  # what the viewer's memories print for this target
    suggestion: str  # a descriptor derived from what the viewer can see
    in_world: bool


def alias_targets(viewer: Viewer, knowledge: WorldKnowledge) -> list[str]:
    """Every entity of the viewer's world, then alias targets that are not in it."""
    targets = [e.id for e in knowledge.entities if e.id != viewer.id]
    targets += [t for t in viewer.aliases if t not in knowledge.objects and t != viewer.id]
    return targets


def alias_rows(
    viewer: Viewer,
    knowledge: WorldKnowledge | None = None,
    targets: list[str] | None = None,
) -> list[AliasRow]:
    """The alias table: one row per target (default: every alias_targets one, in its order).

    A page that shows only some targets passes them: a suggestion is derived from what the
    viewer can see of each target, and a 1,000-entity world should not pay for 900 unseen.
    """
    knowledge = knowledge or world_knowledge(viewer.obj.world_id)
    rows = []
    known = KnownIds.of(knowledge.objects)
    for target_id in alias_targets(viewer, knowledge) if targets is None else targets:
        label = viewer.aliases.get(target_id)
        true_name = knowledge.true_name(target_id)
        rows.append(
            AliasRow(
                target_id=target_id,
                label=label,
                state=alias_state(label, true_name),
                true_name=true_name,
                shown_as=label if label is not None else UNFAMILIAR,
                suggestion=derive_descriptor(
                    knowledge.visible_attributes(viewer.id, target_id), known
                ),
                in_world=target_id in knowledge.objects,
            )
        )
    return rows


@dataclass(frozen=True)
class MatrixCell:
    label: str | None
    state: str


def knowledge_matrix(world_id: str) -> tuple[list[WorldObject], dict[str, dict[str, MatrixCell]]]:
    """Viewers × targets: the label each viewer uses for each other entity."""
    knowledge = world_knowledge(world_id)
    entities = knowledge.entities
    matrix: dict[str, dict[str, MatrixCell]] = {}
    for viewer_obj in entities:
        viewer = viewer_of(viewer_obj)
        row = {}
        for target in entities:
            if target.id == viewer.id:
                continue
            label = viewer.aliases.get(target.id)
            row[target.id] = MatrixCell(label=label, state=alias_state(label, knowledge.true_name(target.id)))
        matrix[viewer.id] = row
    return entities, matrix


# --- the subjective buffer ------------------------------------------------------------------


@dataclass(frozen=True)
class RenderedEntry:
    id: str
    timestamp: str
    created_at: int
    line: str | None
    undeliverable: str | None
    intent_json: str
    outcome_json: str | None
    type: str | None
    actor_id: str | None
    target_ids: tuple[str, ...]
    location_id: str | None
    conversation_id: str | None
    retracted: bool
    abstracted_into: str | None


def _intent_facts(intent_json: str) -> tuple[str | None, str | None, tuple[str, ...]]:
    try:
        intent = json.loads(intent_json)
        targets = intent.get("targetIds") or []
        return (
            intent.get("type") if isinstance(intent.get("type"), str) else None,
            intent.get("actorId") if isinstance(intent.get("actorId"), str) else None,
            tuple(t for t in targets if isinstance(t, str)) if isinstance(targets, list) else (),
        )
    except (ValueError, AttributeError, TypeError):
        return None, None, ()


def render_entry(entry: BufferEntry, viewer: Viewer) -> RenderedEntry:
    try:
        line, reason = render_stored_entry(entry.timestamp, entry.intent_json, entry.outcome_json, viewer.view), None
    except Undeliverable as exc:
        line, reason = None, str(exc)
    type_, actor, targets = _intent_facts(entry.intent_json)
    return RenderedEntry(
        id=entry.id,
        timestamp=entry.timestamp,
        created_at=entry.created_at,
        line=line,
        undeliverable=reason,
        intent_json=entry.intent_json,
        outcome_json=entry.outcome_json,
        type=type_,
        actor_id=actor,
        target_ids=targets,
        location_id=entry.location_id,
        conversation_id=entry.conversation_id,
        retracted=entry.retracted_at is not None,
        abstracted_into=entry.abstracted_into,
    )


BUFFER_FIELDS = (
    "id", "timestamp", "created_at", "intent_json", "outcome_json", "location_id",
    "conversation_id", "retracted_at", "abstracted_into", "owner_id",
)


def iter_buffer(owner_id: str, *, chunk: int = 2000) -> Iterator[BufferEntry]:
    """Every row of one owner in chronological order (ties: write order), streamed."""
    qs = BufferEntry.objects.filter(owner_id=owner_id).only(*BUFFER_FIELDS)
    yield from qs.order_by("timestamp", "created_at", "id").iterator(chunk_size=chunk)


def encode_cursor(entry: RenderedEntry | BufferEntry) -> str:
    raw = json.dumps([entry.timestamp, entry.created_at, entry.id], separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def decode_cursor(cursor: str) -> tuple[str, int, str]:
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        timestamp, created_at, entry_id = json.loads(base64.urlsafe_b64decode(padded.encode()))
        if not (isinstance(timestamp, str) and isinstance(created_at, int) and isinstance(entry_id, str)):
            raise ValueError
    except (ValueError, TypeError, UnicodeDecodeError):
        raise BadCursor("cursor is not one this inspector handed out") from None
    return timestamp, created_at, entry_id


@dataclass
class BufferPage:
    entries: list[RenderedEntry]
    rows_visited: int
    older: str | None = None  # cursor for the page before this one
    newer: str | None = None  # cursor for the page after this one
    total: int | None = None
    filters: dict[str, str] = field(default_factory=dict)


def _after(timestamp: str, created_at: int, entry_id: str) -> Q:
    return Q(timestamp__gt=timestamp) | Q(timestamp=timestamp, created_at__gt=created_at) | Q(
        timestamp=timestamp, created_at=created_at, id__gt=entry_id
    )


def _before(timestamp: str, created_at: int, entry_id: str) -> Q:
    return Q(timestamp__lt=timestamp) | Q(timestamp=timestamp, created_at__lt=created_at) | Q(
        timestamp=timestamp, created_at=created_at, id__lt=entry_id
    )


def buffer_page(
    viewer: Viewer,
    *,
    before: str | None = None,
    after: str | None = None,
    limit: int | None = None,
    types: frozenset[str] | None = None,
    q: str | None = None,
    scan_limit: int = 20000,
) -> BufferPage:
    """One page of the viewer's buffer, chronological, newest page first by default.

    Filters apply to what the viewer reads (type, and text in the rendered line), so they
    run after rendering; `scan_limit` bounds how many rows one page may read to find matches.
    """
    limit = max(1, min(limit or settings.OMNIA_BUFFER_PAGE_SIZE, 500))
    base = BufferEntry.objects.filter(owner_id=viewer.id).only(*BUFFER_FIELDS)
    forward = after is not None
    if after:
        qs = base.filter(_after(*decode_cursor(after))).order_by("timestamp", "created_at", "id")
    else:
        qs = base.order_by("-timestamp", "-created_at", "-id")
        if before:
            qs = qs.filter(_before(*decode_cursor(before)))
    needle = q.casefold() if q else None
    picked: list[RenderedEntry] = []
    visited = 0
    step = limit if not (types or needle) else max(limit * 4, 200)
    offset = 0
    while len(picked) < limit and visited < scan_limit:
        chunk = list(qs[offset : offset + step])
        offset += step
        visited += len(chunk)
        for entry in chunk:
            rendered = render_entry(entry, viewer)
            if types and rendered.type not in types:
                continue
            if needle and needle not in (rendered.line or rendered.undeliverable or "").casefold():
                continue
            picked.append(rendered)
            if len(picked) == limit:
                break
        if len(chunk) < step:
            break
    if not forward:
        picked.reverse()
    page = BufferPage(entries=picked, rows_visited=visited)
    if picked:
        first, last = picked[0], picked[-1]
        has_older = base.filter(_before(first.timestamp, first.created_at, first.id)).exists()
        has_newer = base.filter(_after(last.timestamp, last.created_at, last.id)).exists()
        page.rows_visited += int(has_older) + int(has_newer)
        page.older = encode_cursor(first) if has_older else None
        page.newer = encode_cursor(last) if has_newer else None
    page.filters = {k: v for k, v in {"type": ",".join(sorted(types or ())), "q": q or ""}.items() if v}
    return page


def get_entry(viewer: Viewer, entry_id: str) -> RenderedEntry:
    entry = BufferEntry.objects.filter(pk=entry_id, owner_id=viewer.id).only(*BUFFER_FIELDS).first()
    if entry is None:
        raise NotFound(f"{viewer.id} holds no memory with id {entry_id!r}")
    return render_entry(entry, viewer)


# --- histories and optional engine parts -----------------------------------------------------


def alias_history(viewer_id: str, *, target_id: str | None = None, limit: int = 50) -> list:
    from memory.models import AliasChange

    qs = AliasChange.objects.filter(viewer_id=viewer_id).select_related("changed_by")
    if target_id:
        qs = qs.filter(target_id=target_id)
    return list(qs.order_by("-changed_at", "-id")[:limit])


def engine_module(name: str):
    """The engine module `memory.<name>` if it exists yet, else None (panels say so plainly)."""
    import importlib
    import importlib.util

    if importlib.util.find_spec(f"memory.{name}") is None:
        return None
    return importlib.import_module(f"memory.{name}")


# --- long-term faces, prompt context, leaks, projection status --------------------------------


class EngineMissing(LookupError):
    """An engine part another engineer is still writing; panels say so instead of faking it."""

    def __init__(self, module: str, why: str = "missing") -> None:
        super().__init__(f"not available yet: memory.{module} {why}")
        self.module = module


def require(name: str, *attributes: str):
    module = engine_module(name)
    if module is None:
        raise EngineMissing(name)
    for attribute in attributes:
        if not hasattr(module, attribute):
            raise EngineMissing(name, f"has no {attribute}() yet")
    return module


@dataclass
class FaceView:
    """One long-term entry as a face panel row: where it stands and why."""

    item: object
    state: str  # "default" | "shadowed" | "superseded"
    shadowed_by: str | None = None
    superseded_by: str | None = None
    undeliverable: str | None = None
    absorbed: list[FaceView] = field(default_factory=list)  # superseded members, beside their rollup


@dataclass
class FacesView:
    rows: list[FaceView]
    answer: object
    include_shadowed: bool


def faces_view(viewer_id: str, *, include_shadowed: bool = False) -> FacesView:
    """The viewer's long-term faces; superseded entries sit next to the rollup that absorbed them."""
    longterm = require("longterm", "viewer_faces")
    answer = longterm.viewer_faces(viewer_id, include_shadowed=include_shadowed)
    shadowed = dict(answer.shadowed or {})
    superseded = dict(answer.superseded or {})
    undeliverable = dict(answer.undeliverable or {})
    views: dict[str, FaceView] = {}
    for item in answer.items:
        state = "shadowed" if item.id in shadowed else "superseded" if item.id in superseded else "default"
        views[item.id] = FaceView(
            item=item,
            state=state,
            shadowed_by=shadowed.get(item.id),
            superseded_by=superseded.get(item.id),
            undeliverable=undeliverable.get(item.id),
        )
    rows: list[FaceView] = []
    for view in views.values():
        rollup = views.get(view.superseded_by) if view.superseded_by else None
        if rollup is not None and rollup is not view:
            rollup.absorbed.append(view)
        else:
            rows.append(view)
    return FacesView(rows=rows, answer=answer, include_shadowed=include_shadowed)


def face_maps(viewer_id: str) -> tuple[dict, dict, dict]:
    """(shadowed id -> shadowing id, member id -> rollup id, id -> undeliverable reason)."""
    answer = require("longterm", "viewer_faces").viewer_faces(viewer_id, include_shadowed=True)
    return dict(answer.shadowed), dict(answer.superseded), dict(answer.undeliverable)


def face_item_dict(item: object) -> dict:
    return {
        "id": item.id,
        "scope": item.scope,
        "slug": item.slug,
        "title": item.title,
        "body": item.body,
        "tags": list(item.tags or ()),
        "notes": list(item.notes or ()),
    }


@dataclass(frozen=True)
class Segment:
    """A run of prompt text; `finding` is set when the run is a leak (with its list number)."""

    text: str
    finding: dict | None = None
    number: int | None = None


def highlight(text: str, findings: list[dict]) -> list[Segment]:
    """Cut the prompt at each finding's offsets; overlapping findings keep the earlier span."""
    segments: list[Segment] = []
    at = 0
    for number, finding in enumerate(sorted(findings, key=lambda f: (f["start"], -f["end"])), 1):
        start, end = finding["start"], finding["end"]
        if start < at or not 0 <= start < end <= len(text):
            continue
        if start > at:
            segments.append(Segment(text[at:start]))
        segments.append(Segment(text[start:end], finding, number))
        at = end
    if at < len(text):
        segments.append(Segment(text[at:]))
    return segments


@dataclass
class PromptView:
    text: str
    sections: list
    findings: list[dict]
    segments: list[Segment]
    scanner_missing: str | None


def prompt_view(viewer: Viewer) -> PromptView:
    """The viewer's prompt context, with leak findings when the scanner is there."""
    try:
        scan = require("scan", "scan_viewer")
    except EngineMissing as exc:
        prompt = require("prompt", "prompt_context").prompt_context(viewer)
        return PromptView(prompt.text, list(prompt.sections), [], [Segment(prompt.text)], str(exc))
    result = scan.scan_viewer(viewer.id)
    findings = sorted((f.to_dict() for f in result.findings), key=lambda f: (f["start"], -f["end"]))
    text = result.prompt.text
    return PromptView(text, list(result.prompt.sections), findings, highlight(text, findings), None)


LEAK_FIELDS = ("viewer_id", "section", "kind", "start", "end", "text", "entity_id", "reason")


def leak_findings(*, viewer_id: str | None = None, kind: str | None = None) -> list[dict]:
    """Every finding in every viewer's prompt, ordered by viewer then offset."""
    scan = require("scan", "scan_world")
    found = [
        f.to_dict() for result in scan.scan_world(viewer_id=viewer_id) for f in result.findings
    ]
    if kind is not None:
        found = [f for f in found if f["kind"] == kind]
    return sorted(found, key=lambda f: (f["viewer_id"], f["start"], f["end"], f["kind"]))


def leak_kinds() -> tuple[str, ...]:
    return tuple(getattr(engine_module("scan"), "FINDING_KINDS", ()) or ())


def leak_counts() -> dict[str, dict[str, int]]:
    """viewer id -> kind -> findings, over every loaded world."""
    scan = require("scan", "leak_counts")
    counts: dict[str, dict[str, int]] = {}
    for world in list_worlds():
        counts.update(scan.leak_counts(world.id))
    return dict(sorted(counts.items()))


def projection_status() -> dict:
    return require("workers", "projection_status").projection_status()


@dataclass
class LongTermEntryView:
    item: object
    notes: list[str]
    rollup: dict | None  # {"id", "title"} of the rollup that absorbed this entry
    members: list[dict]  # {"id", "title"} of what this entry (a rollup) absorbed


def _ref(thing: object) -> dict:
    """An item or a bare id, as {"id", "title"}: the engine may hand back either."""
    if isinstance(thing, str):
        return {"id": thing, "title": None}
    return {"id": thing.id, "title": getattr(thing, "title", None)}


def long_term_entry(viewer_id: str, entry_id: str) -> LongTermEntryView:
    """get-by-id always delivers (shadowed or superseded too), with the notes saying why."""
    longterm = require("longterm", "get_long_term_entry")
    try:
        answer = longterm.get_long_term_entry(viewer_id, entry_id)
    except (LookupError, ValueError):
        answer = None
    if answer is None or getattr(answer, "item", None) is None:
        raise NotFound(f"{viewer_id} holds no memory with id {entry_id!r}")
    return LongTermEntryView(
        item=answer.item,
        notes=list(answer.notes or ()),
        rollup=_ref(answer.rollup) if answer.rollup is not None else None,
        members=[_ref(m) for m in answer.members or ()],
    )
