"""Entities, aliases, the buffer, sessions, long-term faces: the world as a viewer reads it."""

from __future__ import annotations

from typing import Any, Literal

from ninja import Schema
from pydantic import Field

from memory.web.schemas.common import _In


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


class FlawOut(Schema):
    kind: str = Field(description="raw_tag, unresolved_tag, unheld_label or grammar")
    start: int = Field(description="offset into `line` (omnia's reading)")
    end: int
    text: str = Field(description="omnia's words there")
    corrected: str = Field(description="what the corrected reading says there")


class BufferEntryOut(Schema):
    id: str
    timestamp: str
    line: str | None = Field(description="the line as omnia rendered it into the NPC's prompt")
    line_corrected: str | None = Field(
        None, description="the same line with omnia's later-era renderer bugs put right"
    )
    flaws: list[FlawOut] = Field(
        default_factory=list, description="where omnia's line differs from the corrected one"
    )
    undeliverable: str | None
    type: str | None
    actor_id: str | None
    target_ids: list[str]
    location_id: str | None
    conversation_id: str | None
    retracted: bool
    abstracted_into: str | None
    event: str | None = Field(None, description="the id of the moment this row witnesses")
    witness_count: int | None = Field(None, description="rows that witness that moment")


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
