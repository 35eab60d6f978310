"""What a comparison answers: plain dataclasses the command, the page and the API all read
(`as_dict()`), and the two modes as enums (their values are what the answer says)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any


class Matching(StrEnum):
    """How the lines of two buffers are paired: by entry id when the saves share ids (a save
    imported twice, or a game that keeps its ids), else by what happened, since a replay
    writes new ids for the same events: the same time and intent first, then the same moment
    told at another time or by the other omnia era (`moments`: kind, actor, targets, words)."""

    BY_ID = "entry id"
    BY_CONTENT = "what happened"


class Mode(StrEnum):
    """Which question a comparison answers: one viewer in two saves, or two viewers in one."""

    SAVES = "saves"
    VIEWERS = "viewers"


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
    """The lists hold one page of the differences (all of them without a budget); the counts
    are of every difference met, `complete` False when the time budget stopped the merge
    (after `read_a` of `rows_a` rows of A and `read_b` of `rows_b` of B)."""

    matching: Matching
    why: str  # why this matching, said once ("no entry id appears in both saves")
    only_a: list[Line] = field(default_factory=list)
    only_b: list[Line] = field(default_factory=list)
    changed: list[ChangedLine] = field(default_factory=list)
    same: int = 0
    only_a_count: int = 0
    only_b_count: int = 0
    changed_count: int = 0
    by_meaning: int = 0  # pairs found by meaning (another time, id or era)
    shown_from: int = 0  # the index of the first difference listed
    rows_a: int = 0
    rows_b: int = 0
    read_a: int = 0
    read_b: int = 0
    complete: bool = True
    matched: int = 0  # moments found in both buffers (read the same or not)
    differences: int = 0  # only_a_count + only_b_count + changed_count

    def close(self) -> None:
        self.matched = self.same + self.changed_count
        self.differences = self.only_a_count + self.only_b_count + self.changed_count

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
    viewer_b: Named | None = None  # B's counterpart when it has another id (a replay's uuid)


@dataclass
class SavesComparison:
    save_a: str
    save_b: str
    viewers: list[ViewerDiff]
    viewers_only_a: list[Named] = field(default_factory=list)
    viewers_only_b: list[Named] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)
    mode: Mode = Mode.SAVES
    viewers_total: int = 0  # viewers both saves hold (the page is `viewers`)
    viewers_from: int = 0

    @property
    def new_leaks(self) -> int:
        return sum(len(v.leaks.new_open) for v in self.viewers)

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "new_open_leaks": self.new_leaks}

    @property
    def complete(self) -> bool:
        return self.viewers_total == self.viewers_from + len(self.viewers) and all(
            v.buffer.complete for v in self.viewers
        )


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
    mode: Mode = Mode.VIEWERS

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)
