"""Reads shared by pages, their JSON twins and the CLI, so none of them can drift.

Nothing here writes: opening a page must never change the store.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django.conf import settings
from django.db.models import Q

from memory.engine.aliases import (
    UNFAMILIAR,
    KnownIds,
    alias_state,
    derive_descriptor,
)
from memory.engine.buffer.rendered import BUFFER_FIELDS, RenderedEntry, render_entry
from memory.engine.cursor import decode_cursor, encode_cursor
from memory.engine.errors import NotFound
from memory.engine.knowledge import Viewer, WorldKnowledge, viewer_of, world_knowledge
from memory.engine.leaks.world_scan import FINDING_KINDS, scan_viewer, scan_world
from memory.engine.leaks.world_scan import leak_counts as leak_counts_of_world
from memory.engine.longterm.reader import FaceItem, FacesAnswer, get_long_term_entry, viewer_faces
from memory.engine.projections.doors import Digest, Page, digest
from memory.engine.projections.doors import episodes as door_episodes
from memory.engine.projections.doors import sessions as door_sessions
from memory.engine.projections.summaries import summaries_for
from memory.engine.projections.worker import projection_status as engine_projection_status
from memory.models import AliasChange, BufferEntry, MemorySession, ObjectType, WorldObject

# --- viewers and what they can see ----------------------------------------------------------


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


def _cursor_of(entry: RenderedEntry) -> str:
    return encode_cursor([entry.timestamp, entry.created_at, entry.id])


def _decoded(cursor: str) -> tuple[str, int, str]:
    timestamp, created_at, entry_id = decode_cursor(cursor, (str, int, str))
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
        qs = base.filter(_after(*_decoded(after))).order_by("timestamp", "created_at", "id")
    else:
        qs = base.order_by("-timestamp", "-created_at", "-id")
        if before:
            qs = qs.filter(_before(*_decoded(before)))
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
        page.older = _cursor_of(first) if has_older else None
        page.newer = _cursor_of(last) if has_newer else None
    page.filters = {k: v for k, v in {"type": ",".join(sorted(types or ())), "q": q or ""}.items() if v}
    return page


def get_entry(viewer: Viewer, entry_id: str) -> RenderedEntry:
    entry = BufferEntry.objects.filter(pk=entry_id, owner_id=viewer.id).only(*BUFFER_FIELDS).first()
    if entry is None:
        raise NotFound(f"{viewer.id} holds no memory with id {entry_id!r}")
    return render_entry(entry, viewer)


# --- histories and optional engine parts -----------------------------------------------------


def alias_history(viewer_id: str, *, target_id: str | None = None, limit: int = 50) -> list:
    qs = AliasChange.objects.filter(viewer_id=viewer_id).select_related("changed_by")
    if target_id:
        qs = qs.filter(target_id=target_id)
    return list(qs.order_by("-changed_at", "-id")[:limit])


@dataclass
class SessionsPanel:
    sessions: Page
    digest: Digest
    episodes: Page
    summaries: dict[str, tuple[str | None, bool]]  # session key -> (summary, stale)


def sessions_panel(viewer_id: str, *, limit: int = 20) -> SessionsPanel:
    """Sessions, digest, episodes and the shown sessions' summaries of one viewer."""
    sessions = door_sessions(viewer_id, limit=limit)
    rows = MemorySession.objects.filter(
        owner_id=viewer_id, session_key__in=[s.session_key for s in sessions.items]
    )
    summaries = {key: answer for (_owner, key), answer in summaries_for(list(rows)).items()}
    return SessionsPanel(
        sessions=sessions,
        digest=digest(viewer_id),
        episodes=door_episodes(viewer_id, limit=limit),
        summaries=summaries,
    )


# --- long-term faces, prompt context, leaks, projection status --------------------------------


@dataclass
class FaceView:
    """One long-term entry as a face panel row: where it stands and why."""

    item: FaceItem
    state: str  # "default" | "shadowed" | "superseded"
    shadowed_by: str | None = None
    superseded_by: str | None = None
    undeliverable: str | None = None
    absorbed: list[FaceView] = field(default_factory=list)  # superseded members, beside their rollup


@dataclass
class FacesView:
    rows: list[FaceView]
    answer: FacesAnswer
    include_shadowed: bool


def faces_view(viewer_id: str, *, include_shadowed: bool = False) -> FacesView:
    """The viewer's long-term faces; superseded entries sit next to the rollup that absorbed them."""
    answer = viewer_faces(viewer_id, include_shadowed=include_shadowed)
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
    answer = viewer_faces(viewer_id, include_shadowed=True)
    return dict(answer.shadowed), dict(answer.superseded), dict(answer.undeliverable)


def face_item_dict(item: FaceItem) -> dict:
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


def prompt_view(viewer: Viewer) -> PromptView:
    """The viewer's prompt context with its leak findings, cut into highlightable runs."""
    result = scan_viewer(viewer.id)
    findings = sorted((f.to_dict() for f in result.findings), key=lambda f: (f["start"], -f["end"]))
    text = result.prompt.text
    return PromptView(text, list(result.prompt.sections), findings, highlight(text, findings))


LEAK_FIELDS = ("viewer_id", "section", "kind", "start", "end", "text", "entity_id", "reason")


def leak_findings(*, viewer_id: str | None = None, kind: str | None = None) -> list[dict]:
    """Every finding in every viewer's prompt, ordered by viewer then offset."""
    found = [
        f.to_dict() for result in scan_world(viewer_id=viewer_id) for f in result.findings
    ]
    if kind is not None:
        found = [f for f in found if f["kind"] == kind]
    return sorted(found, key=lambda f: (f["viewer_id"], f["start"], f["end"], f["kind"]))


def leak_kinds() -> tuple[str, ...]:
    return FINDING_KINDS


def leak_counts() -> dict[str, dict[str, int]]:
    """viewer id -> kind -> findings, over every loaded world."""
    counts: dict[str, dict[str, int]] = {}
    for world in list_worlds():
        counts.update(leak_counts_of_world(world.id))
    return dict(sorted(counts.items()))


def projection_status() -> dict:
    return engine_projection_status()


@dataclass
class LongTermEntryView:
    item: FaceItem
    notes: list[str]
    rollup: dict | None  # {"id", "title"} of the rollup that absorbed this entry
    members: list[dict]  # {"id", "title"} of what this entry (a rollup) absorbed


def _ref(entry_id: str) -> dict:
    """An id as {"id", "title"}: the engine names rollups and members by id alone."""
    return {"id": entry_id, "title": None}


def long_term_entry(viewer_id: str, entry_id: str) -> LongTermEntryView:
    """get-by-id always delivers (shadowed or superseded too), with the notes saying why."""
    try:
        answer = get_long_term_entry(viewer_id, entry_id)
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
