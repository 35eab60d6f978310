"""Rollups, projection runs, and the saves themselves."""

from __future__ import annotations

from typing import Any

from ninja import Schema
from pydantic import Field

from memory.web.schemas.common import _In


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
