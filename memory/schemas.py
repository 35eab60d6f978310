"""The API's schemas: <Thing>In for what a door accepts, <Thing>Out for what a read returns."""

from __future__ import annotations

from typing import Any, Literal

from ninja import Schema
from pydantic import Field


class ErrorOut(Schema):
    """The one error shape of every 4xx: what went wrong, a stable code, and the field to blame."""

    detail: str
    code: str
    field: str | None = None


class EntityOut(Schema):
    id: str
    world_id: str | None
    location_id: str | None
    is_agent: bool | None


class EntityListOut(Schema):
    items: list[EntityOut]
    count: int


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
    aliases_error: str | None = None


class AliasChangeOut(Schema):
    viewer_id: str
    target_id: str
    before: str | None
    after: str | None
    warnings: list[str]
    changed: bool


class AliasIn(Schema):
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


class MemoryIn(Schema):
    intent: dict[str, Any] = Field(description="a v1 or v2 omnia intent object")
    outcome: dict[str, Any] | None = None
    timestamp: str | None = Field(None, description="ISO-8601; defaults to the world clock")
    location_id: str | None = None
    conversation_id: str | None = None


class MemoryOut(Schema):
    id: str
    owner_id: str
    timestamp: str
    generation: int | None = None
    retracted: bool
