"""The API's schemas: <Thing>In for what a door accepts, <Thing>Out for what a read returns."""

from __future__ import annotations

from typing import Any, Literal

from ninja import Schema
from pydantic import ConfigDict, Field, field_validator

from memory.engine.strict_json import text_problem


class _In(Schema):
    """A request body: JSON types as they are, never coerced (`"5"` is not 5, `true` is not 1,
    an object is not a string), and no text a backend cannot store (NUL, a lone surrogate).
    Objects inside (an intent) are checked by the engine's door."""

    model_config = ConfigDict(strict=True)

    @field_validator("*", mode="after")
    @classmethod
    def _storable_text(cls, value: Any) -> Any:
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, str) and (problem := text_problem(item)):
                raise ValueError(problem)
        return value


class ErrorOut(Schema):
    """The one error shape of every 4xx: what went wrong, a stable code, and the field to blame."""

    detail: str
    code: str
    field: str | None = None


class EntityOut(Schema):
    id: str
    name: str  # the true name, else the id: what the pages call it
    world_id: str | None
    location_id: str | None
    is_agent: bool | None


class EntityListOut(Schema):
    items: list[EntityOut]
    count: int  # items on this page
    total: int  # every match


class AliasOut(Schema):
    target_id: str
    label: str | None
    state: Literal["known", "descriptor", "unknown"]
    shown_as: str
    true_name: str | None = Field(description="QA information: never shown to the viewer")
    suggestion: str
    in_world: bool


class AliasListOut(Schema):
    viewer_id: str
    items: list[AliasOut]
    total: int  # every target of the viewer's alias table; `items` is one page of them
    aliases_error: str | None = None


class AliasChangeOut(Schema):
    viewer_id: str
    target_id: str
    before: str | None
    after: str | None
    warnings: list[str]
    changed: bool


class AliasIn(_In):
    label: str = Field(min_length=1, max_length=200)


class BufferEntryOut(Schema):
    id: str
    timestamp: str
    line: str | None
    undeliverable: str | None
    type: str | None
    actor_id: str | None
    target_ids: list[str]
    location_id: str | None
    conversation_id: str | None
    retracted: bool
    abstracted_into: str | None


class EntryOut(BufferEntryOut):
    intent: Any = Field(description="the raw intent JSON as stored (a string if it is not JSON)")
    outcome: Any = None


class BufferPageOut(Schema):
    viewer_id: str
    items: list[BufferEntryOut]
    older: str | None = Field(description="cursor for the page before this one (pass as `before`)")
    newer: str | None = Field(description="cursor for the page after this one (pass as `after`)")
    rows_visited: int
    searched_to: str | None = Field(None, description="out of time: the last row's timestamp")


class MemoryIn(_In):
    intent: dict[str, Any] = Field(description="a v1 or v2 omnia intent object")
    outcome: dict[str, Any] | None = None
    timestamp: str | None = Field(
        None,
        description="ISO-8601 with a zone, as omnia writes it (2026-07-06T12:38:00.000Z); "
        "defaults to the world clock",
    )
    location_id: str | None = None
    conversation_id: str | None = None


class MemoryOut(Schema):
    id: str
    owner_id: str
    timestamp: str
    generation: int | None = None
    retracted: bool
    changed: bool = Field(
        default=True,
        description="false when the call changed nothing (retracting a retracted memory)",
    )


class SessionOut(Schema):
    session_key: str
    kind: Literal["conversation", "scene"]
    first_at: str
    last_at: str
    memory_count: int = Field(description="historical: every member ever written, retracted or not")
    dialogue_count: int
    last_member_id: str
    content_hash: str
    live_count: int = Field(description="members not retracted, counted at read time")


class SessionPageOut(Schema):
    viewer_id: str
    items: list[SessionOut]
    next_cursor: str | None = Field(description="pass as `before` for the next (older) page")
    rows_visited: int


class DigestOut(Schema):
    viewer_id: str
    lines: list[str] = Field(description="empty when `unchanged`")
    hash: str
    unchanged: bool = Field(description="true when `known_hash` equals the current hash")
    rows_visited: int


class EpisodeOut(Schema):
    ordinal: int
    first_at: str
    last_at: str
    first_member_id: str
    last_member_id: str
    member_count: int
    is_open: bool


class EpisodePageOut(Schema):
    viewer_id: str
    items: list[EpisodeOut]
    next_cursor: str | None
    rows_visited: int


class FaceItemOut(Schema):
    id: str
    scope: str
    slug: str
    title: str | None
    body: str | None
    tags: list[str] = Field(
        description="[shadowed] / [superseded] when include_shadowed brings it back"
    )
    notes: list[str]
    state: Literal["default", "shadowed", "superseded"]
    shadowed_by: str | None
    superseded_by: str | None
    undeliverable: str | None = Field(description="why the body cannot be rendered, if so")


class NamedEntryOut(Schema):
    id: str
    name: str


class NameWarningOut(Schema):
    name: str = Field(description="the name they all read as, trimmed")
    entries: list[NamedEntryOut] = Field(description="each entry and its exact stored name")


class FacesOut(Schema):
    viewer_id: str
    include_shadowed: bool
    items: list[FaceItemOut]
    shadowed: dict[str, str] = Field(description="entry id -> id of the home entry shadowing it")
    superseded: dict[str, str] = Field(description="entry id -> id of the rollup that absorbed it")
    withheld: list[str] = Field(description="retracted or flagged: delivered by id only")
    undeliverable: dict[str, str]
    rows_visited: int
    name_warnings: list[NameWarningOut] = Field(
        default=[], description="entries stored before names were trimmed that read as one name"
    )


class SearchOut(Schema):
    viewer_id: str
    q: str
    include_shadowed: bool
    items: list[FaceItemOut]


class RefOut(Schema):
    id: str
    title: str | None


class MemberOut(RefOut):
    kind: str | None = Field(default=None, description="buffer or ledger")
    abstracted_into: str | None = Field(
        default=None, description="the member row's own abstracted-into mark"
    )


class LongTermEntryOut(Schema):
    viewer_id: str
    item: FaceItemOut
    notes: list[str] = Field(description="shadowed by / superseded by / undeliverable because")
    rollup: RefOut | None = Field(description="the rollup that absorbed this entry")
    members: list[MemberOut] = Field(description="what this entry, a rollup, absorbed")
    shadows: list[RefOut] = Field(
        default_factory=list, description="the layer entries of the same name this one replaces"
    )
    abstracted_into: str | None = Field(
        default=None, description="this entry's own abstracted-into mark (a ledger row's)"
    )


class SlugOut(Schema):
    viewer_id: str
    slug: str
    item: FaceItemOut


class PromptSectionOut(Schema):
    name: str
    text: str


class LeakOccurrenceOut(Schema):
    start: int
    end: int
    source_id: str | None = Field(description="the stored row (buffer or long-term) the line is")


class LeakFindingOut(Schema):
    world_id: str | None
    viewer_id: str
    section: str
    kind: str
    start: int = Field(description="offset of the first occurrence into the viewer's prompt text")
    end: int
    text: str
    entity_id: str | None
    attribute_name: str | None = Field(None, description="for a private_attribute finding")
    reason: str
    count: int = Field(description="occurrences of this leak in the section")
    source_id: str | None = Field(description="the stored row of the first occurrence")
    occurrences: list[LeakOccurrenceOut]
    context_before: str
    context_after: str
    state: str = Field(description="open, or accepted as expected by an editor")
    accepted_reason: str | None
    accepted_by: str | None
    accepted_at: str | None


class LeakReportItemOut(LeakFindingOut):
    viewer_name: str = Field(description="the viewer's true name, else its id")
    entity_name: str | None
    can_alias: bool = Field(description="the entity is another entity the viewer can name")


class PromptOut(Schema):
    viewer_id: str
    text: str
    sections: list[PromptSectionOut]
    findings: list[LeakFindingOut] | None = Field(description="null while the scanner is missing")


class LeakKeyIn(Schema):
    viewer_id: str
    section: str = Field(description="the prompt section, as a finding names it")
    kind: str
    text: str


class LeakAcceptIn(LeakKeyIn):
    reason: str = Field(min_length=1, max_length=2000, description="why it is expected")


class LeakAcceptanceOut(Schema):
    viewer_id: str
    section: str
    kind: str
    text: str
    reason: str
    accepted_by: str | None
    accepted_at: str


class LeaksOut(Schema):
    items: list[LeakReportItemOut]
    count: int


class AbstractIn(_In):
    member_ids: list[str] = Field(min_length=1, description="buffer rows or long-term entries")
    name: str = Field(min_length=1, max_length=200)
    body: str = Field(max_length=20000)
    slug: str | None = Field(None, max_length=200)
    expected_generation: int = Field(ge=0, description="the owner's generation when you read it")


class AbstractOut(Schema):
    id: str
    owner_id: str
    scope: str
    slug: str
    name: str | None
    generation: int
    member_ids: list[str]


class CycleOut(Schema):
    rows_visited: int
    rows_folded: int
    sessions_written: int
    shards_skipped: list[int]


class RebuildOut(Schema):
    rows_folded: int
    sessions: int
    episodes: int


class VerifyOut(Schema):
    sessions: int
    identical: int
    drift: list[dict[str, Any]]
    episodes: dict[str, Any] = Field(default={}, description="episodes, identical, drift")
    shards: dict[str, int] = Field(
        default={},
        description="configured, stored (the count rows are partitioned for), "
        "stranded_rows (in no visited shard)",
    )
    problems: dict[str, Any] = Field(
        default={}, description="rows the fold cannot fold, recorded, drift between the two"
    )


class SaveOut(Schema):
    """A save and where its rows came from (provenance), as the overview shows it."""

    name: str
    kind: str
    era: str
    title: str
    source_name: str
    source_size: int | None
    source_sha256: str
    world_ids: list[str]
    counts: dict[str, int]  # rows per table at import
    command: str
    imported_at: str  # ISO 8601, UTC
    imported_by: str


class SaveListOut(Schema):
    items: list[SaveOut]
    count: int


class SaveDeletedOut(Schema):
    name: str
    rows_deleted: dict[str, int]  # table -> rows removed
    total: int
