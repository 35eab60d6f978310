"""Compare: two viewers in one save, or one viewer in two saves (issue 16 item 4).

Two questions QA asks after a replay:
- *What does A know that B doesn't?* Two viewers of one save: whom each names and how, the
  private attributes the visibility rule (`visibility.can_see`) lets one see and not the
  other, the sessions and the memories one has and the other lacks.
- *What changed between two playthroughs?* One viewer in two saves: buffer lines only in A,
  only in B, and lines whose rendering changed (each stored row rendered as the viewer reads
  it, `buffer.rendered`); alias changes; sessions and episodes added or gone (the stored
  projections; a save with unfolded rows says so, or is folded first); leak findings new,
  fixed and unchanged (the stored findings, brought up to date first or scanned in memory).

Lines are matched by entry id when the two buffers share ids (a save imported twice, or a
game that keeps its ids), else by (timestamp, intent JSON): a replay writes new ids for the
same events. The answer says which, and why.

Bounded memory: the two buffers are streamed side by side in one key order and merged, so
only the differences are held, never both buffers. The order is the database's in a byte
collation, which is Python's string order, so the merge and the database agree on every
backend.

No HTTP here: the command, the page and the API all read these dataclasses (`as_dict()`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from typing import Any

from django.db import connection
from django.db.models.functions import Collate

from memory.active_save import use
from memory.engine.buffer.rendered import BUFFER_FIELDS, render_entry
from memory.engine.clock import time_key
from memory.engine.errors import InvalidInput, NotFound
from memory.engine.knowledge import Viewer, true_names, viewer_of, world_knowledge
from memory.engine.leaks import stored
from memory.engine.leaks.accepted import acceptances
from memory.engine.leaks.world_scan import ScanFinding
from memory.engine.projections.cycle import run_cycle
from memory.engine.projections.worker import projection_status
from memory.engine.saves import get_save
from memory.engine.visibility import PUBLIC
from memory.models import BufferEntry, Episode, MemorySession, ObjectType, Save, WorldObject

BY_ID = "entry id"
BY_CONTENT = "time and intent"


# --- results -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Line:
    """One stored buffer row as its viewer reads it."""

    id: str
    timestamp: str
    line: str | None
    undeliverable: str | None = None
    retracted: bool = False

    @property
    def text(self) -> str:
        """What a person reads: the line, or why it cannot be shown."""
        shown = self.line if self.line is not None else f"(undeliverable: {self.undeliverable})"
        return f"{shown} (retracted)" if self.retracted else shown


@dataclass(frozen=True)
class ChangedLine:
    a: Line
    b: Line


@dataclass
class BufferDiff:
    matching: str  # BY_ID or BY_CONTENT
    why: str
    only_a: list[Line] = field(default_factory=list)
    only_b: list[Line] = field(default_factory=list)
    changed: list[ChangedLine] = field(default_factory=list)
    same: int = 0

    @property
    def differs(self) -> bool:
        return bool(self.only_a or self.only_b or self.changed)


@dataclass(frozen=True)
class Named:
    """Someone or something, by id and by the name QA reads."""

    id: str
    name: str


@dataclass(frozen=True)
class AliasItem:
    target: Named
    a: str | None  # the label in A (None: A does not name the target)
    b: str | None


@dataclass
class AliasDiff:
    only_a: list[AliasItem] = field(default_factory=list)
    only_b: list[AliasItem] = field(default_factory=list)
    changed: list[AliasItem] = field(default_factory=list)
    same: list[AliasItem] = field(default_factory=list)


@dataclass(frozen=True)
class SessionRef:
    session_key: str
    kind: str
    place: Named | None
    first_at: str
    last_at: str
    memory_count: int


@dataclass(frozen=True)
class EpisodeRef:
    first_at: str
    last_at: str
    member_count: int
    is_open: bool


@dataclass
class ProjectionDiff:
    """Sessions (by key) or episodes (by span and size) in B and not A (added), in A and not
    B (gone); `changed` sessions keep their key but not their content hash."""

    added: list[Any] = field(default_factory=list)
    gone: list[Any] = field(default_factory=list)
    changed: list[Any] = field(default_factory=list)
    same: int = 0


@dataclass(frozen=True)
class FindingItem:
    section: str
    kind: str
    text: str
    reason: str
    count: int
    state: str  # "open" or "accepted" (in the save it is listed from)
    entity_id: str | None = None  # whom or what it leaks (a page names it)
    attribute_name: str | None = None  # the private attribute, for that kind


@dataclass
class LeakDiff:
    new: list[FindingItem] = field(default_factory=list)  # in B, not in A
    fixed: list[FindingItem] = field(default_factory=list)  # in A, not in B
    unchanged: list[FindingItem] = field(default_factory=list)  # in both (as B has it)

    @property
    def new_open(self) -> list[FindingItem]:
        """New findings nobody accepted as expected in B: what a CI gate fails on."""
        return [f for f in self.new if f.state == "open"]


@dataclass
class ViewerDiff:
    """One viewer across two saves."""

    viewer: Named
    buffer: BufferDiff
    aliases: AliasDiff
    sessions: ProjectionDiff | None  # None: a save has unfolded rows (see notices)
    episodes: ProjectionDiff | None
    leaks: LeakDiff


@dataclass
class SavesComparison:
    save_a: str
    save_b: str
    viewers: list[ViewerDiff]
    viewers_only_a: list[Named] = field(default_factory=list)
    viewers_only_b: list[Named] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)
    mode: str = "saves"

    @property
    def new_leaks(self) -> int:
        return sum(len(v.leaks.new_open) for v in self.viewers)

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "new_open_leaks": self.new_leaks}


@dataclass(frozen=True)
class AttributeItem:
    object: Named
    name: str
    value: str


@dataclass
class ViewersComparison:
    save: str
    viewer_a: Named
    viewer_b: Named
    aliases: AliasDiff
    private_only_a: list[AttributeItem]  # private attributes A may see and B may not
    private_only_b: list[AttributeItem]
    private_both: int
    sessions_only_a: list[SessionRef]  # session keys A has and B lacks
    sessions_only_b: list[SessionRef]
    sessions_shared: int
    memories: BufferDiff  # lines only A remembers, only B, and the same event read differently
    notices: list[str] = field(default_factory=list)
    mode: str = "viewers"

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


# --- saves, viewers, names ---------------------------------------------------------------------


def _save(name: str, field_name: str) -> Save:
    try:
        return get_save(name)
    except NotFound as exc:
        raise NotFound(str(exc), field=field_name) from None


def _entity(save: Save, viewer_id: str, field_name: str) -> WorldObject:
    obj = WorldObject.every_save.filter(
        game_save=save, id=viewer_id, type=ObjectType.ENTITY
    ).first()
    if obj is None:
        raise NotFound(f"no entity with id {viewer_id!r} in save {save.name!r}", field=field_name)
    return obj


def _names(save: Save, ids: Iterable[str]) -> dict[str, str]:
    with use(save):
        return true_names(sorted(set(ids)))


def _named(names: dict[str, str], object_id: str) -> Named:
    return Named(id=object_id, name=names.get(object_id, object_id))


def _lag(save: Save) -> int:
    with use(save):
        return int(projection_status()["lag_rows"])


def _fold_or_say(save: Save, *, fold: bool, notices: list[str]) -> bool:
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


# --- the buffer merge --------------------------------------------------------------------------


def _collation() -> str:
    # Byte order of UTF-8 text is code-point order, which is how Python compares strings.
    return "C" if connection.vendor == "postgresql" else "BINARY"


# Rows travel as tuples of these fields (a model instance per row cost most of a 40,000-row
# merge); a row becomes a BufferEntry only when it is rendered.
_FIELDS = BUFFER_FIELDS
_AT = {name: i for i, name in enumerate(_FIELDS)}
_RAW = tuple(_AT[f] for f in ("timestamp", "intent_json", "outcome_json", "untimed"))


def _stream(save: Save, owner_id: str, matching: str) -> Iterator[tuple]:
    c = _collation()
    rows = BufferEntry.every_save.filter(game_save=save, owner_id=owner_id)
    if matching == BY_ID:
        order = [Collate("id", c)]
    else:
        # Rows with the same time and intent pair up in write order.
        order = [Collate("timestamp", c), Collate("intent_json", c), "created_at", Collate("id", c)]
    return rows.order_by(*order).values_list(*_FIELDS).iterator(chunk_size=2000)


def _key(row: tuple, matching: str) -> tuple[str, ...]:
    if matching == BY_ID:
        return (row[_AT["id"]],)
    return (row[_AT["timestamp"]], row[_AT["intent_json"]])


def _line(row: tuple, viewer: Viewer) -> Line:
    r = render_entry(BufferEntry(**dict(zip(_FIELDS, row, strict=True))), viewer)
    return Line(
        id=r.id,
        timestamp=r.timestamp,
        line=r.line,
        undeliverable=r.undeliverable,
        retracted=r.retracted,
    )


def _raw(row: tuple) -> tuple:
    """Everything of a row its rendering reads (beside its reader)."""
    return (*(row[i] for i in _RAW), row[_AT["retracted_at"]] is None)


def _shared_ids(a: Save, b: Save, owner_a: str, owner_b: str) -> int:
    ids_a = BufferEntry.every_save.filter(game_save=a, owner_id=owner_a).values("id")
    return BufferEntry.every_save.filter(game_save=b, owner_id=owner_b, id__in=ids_a).count()


def _matching(a: Save, b: Save, owner_a: str, owner_b: str) -> tuple[str, str]:
    if a.pk == b.pk:
        return BY_CONTENT, "two viewers never share an entry id: matched by time and intent"
    shared = _shared_ids(a, b, owner_a, owner_b)
    if shared:
        return BY_ID, f"{shared} entry id(s) appear in both saves: ids are stable"
    return BY_CONTENT, "no entry id appears in both saves: matched by time and intent"


def _chronological(line: Line) -> tuple[str, str]:
    return (time_key(line.timestamp), line.id)


def diff_buffers(
    a: Save, viewer_a: Viewer, b: Save, viewer_b: Viewer, *, matching: tuple[str, str]
) -> BufferDiff:
    """Merge the two buffers in key order; keep only what differs (then put it in time order)."""
    how, why = matching
    diff = BufferDiff(matching=how, why=why)
    same_reader = viewer_a.id == viewer_b.id and dict(viewer_a.aliases) == dict(viewer_b.aliases)
    rows_a, rows_b = _stream(a, viewer_a.id, how), _stream(b, viewer_b.id, how)
    row_a, row_b = next(rows_a, None), next(rows_b, None)
    while row_a is not None or row_b is not None:
        key_a = _key(row_a, how) if row_a is not None else None
        key_b = _key(row_b, how) if row_b is not None else None
        if key_b is None or (key_a is not None and key_a < key_b):
            diff.only_a.append(_line(row_a, viewer_a))
            row_a = next(rows_a, None)
        elif key_a is None or key_b < key_a:
            diff.only_b.append(_line(row_b, viewer_b))
            row_b = next(rows_b, None)
        elif same_reader and _raw(row_a) == _raw(row_b):
            # A line is a pure function of its row and its reader: the same row read by the
            # same reader needs no rendering to be known the same (most of a replay's rows).
            diff.same += 1
            row_a, row_b = next(rows_a, None), next(rows_b, None)
        else:
            line_a, line_b = _line(row_a, viewer_a), _line(row_b, viewer_b)
            if line_a.text != line_b.text:
                diff.changed.append(ChangedLine(a=line_a, b=line_b))
            else:
                diff.same += 1
            row_a, row_b = next(rows_a, None), next(rows_b, None)
    diff.only_a.sort(key=_chronological)
    diff.only_b.sort(key=_chronological)
    diff.changed.sort(key=lambda c: _chronological(c.b))
    return diff


# --- aliases, sessions, episodes, findings -----------------------------------------------------


def diff_aliases(
    aliases_a: dict[str, str], aliases_b: dict[str, str], names: dict[str, str], *, skip=()
) -> AliasDiff:
    diff = AliasDiff()
    for target in sorted(set(aliases_a) | set(aliases_b)):
        if target in skip:
            continue
        item = AliasItem(_named(names, target), aliases_a.get(target), aliases_b.get(target))
        if target not in aliases_b:
            diff.only_a.append(item)
        elif target not in aliases_a:
            diff.only_b.append(item)
        elif item.a != item.b:
            diff.changed.append(item)
        else:
            diff.same.append(item)
    return diff


def _kind(session_key: str) -> str:
    return "scene" if session_key.startswith("scene:") else "conversation"


def _sessions(save: Save, owner_id: str) -> dict[str, MemorySession]:
    rows = MemorySession.every_save.filter(game_save=save, owner_id=owner_id)
    return {s.session_key: s for s in rows.order_by("last_key", "session_key")}


def _session_refs(save: Save, rows: list[MemorySession]) -> list[SessionRef]:
    places = {
        s.session_key: s.session_key.removeprefix("scene:") or None
        for s in rows
        if _kind(s.session_key) == "scene"
    }
    names = _names(save, [p for p in places.values() if p])
    return [
        SessionRef(
            session_key=s.session_key,
            kind=_kind(s.session_key),
            place=_named(names, places[s.session_key]) if places.get(s.session_key) else None,
            first_at=s.first_at,
            last_at=s.last_at,
            memory_count=int(s.memory_count),
        )
        for s in sorted(rows, key=lambda s: (time_key(s.first_at), s.session_key))
    ]


def diff_sessions(a: Save, b: Save, viewer_id: str) -> ProjectionDiff:
    in_a, in_b = _sessions(a, viewer_id), _sessions(b, viewer_id)
    diff = ProjectionDiff()
    diff.added = _session_refs(b, [s for k, s in in_b.items() if k not in in_a])
    diff.gone = _session_refs(a, [s for k, s in in_a.items() if k not in in_b])
    diff.changed = _session_refs(
        b, [s for k, s in in_b.items() if k in in_a and in_a[k].content_hash != s.content_hash]
    )
    diff.same = sum(1 for k, s in in_b.items() if k in in_a) - len(diff.changed)
    return diff


def _episodes(save: Save, owner_id: str) -> list[EpisodeRef]:
    rows = Episode.every_save.filter(game_save=save, owner_id=owner_id).order_by("ordinal")
    return [EpisodeRef(e.first_at, e.last_at, int(e.member_count), bool(e.is_open)) for e in rows]


def diff_episodes(a: Save, b: Save, viewer_id: str) -> ProjectionDiff:
    """Episodes have no id a replay keeps: one is the same when its span and size are."""
    in_a, in_b = _episodes(a, viewer_id), _episodes(b, viewer_id)
    keys_a, keys_b = set(in_a), set(in_b)
    return ProjectionDiff(
        added=[e for e in in_b if e not in keys_a],
        gone=[e for e in in_a if e not in keys_b],
        same=len(keys_a & keys_b),
    )


def viewer_findings(save: Save, viewer_id: str, *, refresh: bool) -> list[FindingItem]:
    """The viewer's leak findings in `save`: the stored ones, refreshed first when `refresh`
    (a command may write); otherwise stored when current, else scanned in memory (a page
    never writes)."""
    with use(save):
        if refresh:
            stored.refresh([viewer_id])
            found = stored.stored_findings([viewer_id])[viewer_id]
        elif viewer_id in stored.scan_state([viewer_id]).up_to_date:
            found = stored.stored_findings([viewer_id])[viewer_id]
        else:
            found = stored.scan_fresh([viewer_id]).get(viewer_id, [])
        accepted = acceptances([viewer_id])
    return [_finding_item(f, "accepted" if f.key in accepted else "open") for f in found]


def _finding_item(f: ScanFinding, state: str) -> FindingItem:
    g = f.finding
    return FindingItem(
        f.section, g.kind, g.text, g.reason, f.count, state, g.entity_id, g.attribute_name
    )


def diff_findings(in_a: list[FindingItem], in_b: list[FindingItem]) -> LeakDiff:
    """A finding is the same leak in both saves when its section, kind and text are (what an
    acceptance is kept by too)."""

    def key(f: FindingItem) -> tuple[str, str, str]:
        return (f.section, f.kind, f.text)

    keys_a, keys_b = {key(f) for f in in_a}, {key(f) for f in in_b}
    return LeakDiff(
        new=[f for f in in_b if key(f) not in keys_a],
        fixed=[f for f in in_a if key(f) not in keys_b],
        unchanged=[f for f in in_b if key(f) in keys_a],
    )


# --- one viewer, two saves ---------------------------------------------------------------------


def _entities(save: Save) -> dict[str, WorldObject]:
    rows = WorldObject.every_save.filter(game_save=save, type=ObjectType.ENTITY).order_by("id")
    return {o.id: o for o in rows}


def compare_saves(
    save_a: str,
    save_b: str,
    viewer_id: str | None = None,
    *,
    refresh: bool = False,
    fold: bool = False,
) -> SavesComparison:
    """The playthrough diff of one viewer (or, with none named, of every viewer both saves
    hold) from save A to save B. `fold` folds a save with unfolded rows first and `refresh`
    brings stored leak findings up to date: both write, so only a command asks for them."""
    a, b = _save(save_a, "a"), _save(save_b, "b")
    if a.pk == b.pk:
        raise InvalidInput("compare two different saves (or two viewers with --save)", field="b")
    entities_a, entities_b = _entities(a), _entities(b)
    names = {**_names(a, entities_a), **_names(b, entities_b)}
    if viewer_id is not None:
        _entity(a, viewer_id, "viewer")
        _entity(b, viewer_id, "viewer")
        wanted = [viewer_id]
    else:
        wanted = sorted(set(entities_a) & set(entities_b))
    notices: list[str] = []
    folded = _fold_or_say(a, fold=fold, notices=notices)
    folded = _fold_or_say(b, fold=fold, notices=notices) and folded
    viewers = []
    for vid in wanted:
        va, vb = viewer_of(entities_a[vid]), viewer_of(entities_b[vid])
        target_names = {
            **_names(a, va.aliases),
            **_names(b, vb.aliases),
        }
        viewers.append(
            ViewerDiff(
                viewer=_named(names, vid),
                buffer=diff_buffers(a, va, b, vb, matching=_matching(a, b, vid, vid)),
                aliases=diff_aliases(dict(va.aliases), dict(vb.aliases), target_names),
                sessions=diff_sessions(a, b, vid) if folded else None,
                episodes=diff_episodes(a, b, vid) if folded else None,
                leaks=diff_findings(
                    viewer_findings(a, vid, refresh=refresh),
                    viewer_findings(b, vid, refresh=refresh),
                ),
            )
        )
    if viewer_id is None:
        only_a = sorted(set(entities_a) - set(entities_b))
        only_b = sorted(set(entities_b) - set(entities_a))
    else:
        only_a = only_b = []
    return SavesComparison(
        save_a=a.name,
        save_b=b.name,
        viewers=viewers,
        viewers_only_a=[_named(names, v) for v in only_a],
        viewers_only_b=[_named(names, v) for v in only_b],
        notices=notices,
    )


# --- two viewers, one save ---------------------------------------------------------------------


def _private_visible(
    save: Save, a: WorldObject, b: WorldObject
) -> tuple[list[AttributeItem], list[AttributeItem], int]:
    world = a.world_id if a.world_id == b.world_id else None
    with use(save):
        knowledge = world_knowledge(world)
    names = _names(save, knowledge.attributes)
    only_a, only_b, both = [], [], 0
    for object_id in sorted(knowledge.attributes):
        for name, attr in sorted(knowledge.attributes[object_id].items()):
            if attr.visibility == PUBLIC:
                continue
            sees_a, sees_b = knowledge.can_see(a.id, attr), knowledge.can_see(b.id, attr)
            item = AttributeItem(_named(names, object_id), name, attr.value)
            if sees_a and not sees_b:
                only_a.append(item)
            elif sees_b and not sees_a:
                only_b.append(item)
            elif sees_a and sees_b:
                both += 1
    return only_a, only_b, both


def compare_viewers(save_name: str, viewer_a: str, viewer_b: str) -> ViewersComparison:
    """What viewer A knows that viewer B doesn't (and the reverse) in one save."""
    save = _save(save_name, "save")
    obj_a, obj_b = _entity(save, viewer_a, "a"), _entity(save, viewer_b, "b")
    if obj_a.id == obj_b.id:
        raise InvalidInput("compare two different viewers", field="b")
    va, vb = viewer_of(obj_a), viewer_of(obj_b)
    names = _names(save, [obj_a.id, obj_b.id, *va.aliases, *vb.aliases])
    notices: list[str] = []
    _fold_or_say(save, fold=False, notices=notices)
    private_a, private_b, private_both = _private_visible(save, obj_a, obj_b)
    sessions_a, sessions_b = _sessions(save, obj_a.id), _sessions(save, obj_b.id)
    return ViewersComparison(
        save=save.name,
        viewer_a=_named(names, obj_a.id),
        viewer_b=_named(names, obj_b.id),
        # Each one's name for the other is not knowledge the other could share.
        aliases=diff_aliases(dict(va.aliases), dict(vb.aliases), names, skip=(obj_a.id, obj_b.id)),
        private_only_a=private_a,
        private_only_b=private_b,
        private_both=private_both,
        sessions_only_a=_session_refs(
            save, [s for k, s in sessions_a.items() if k not in sessions_b]
        ),
        sessions_only_b=_session_refs(
            save, [s for k, s in sessions_b.items() if k not in sessions_a]
        ),
        sessions_shared=sum(1 for k in sessions_a if k in sessions_b),
        memories=diff_buffers(save, va, save, vb, matching=_matching(save, save, va.id, vb.id)),
        notices=notices,
    )
