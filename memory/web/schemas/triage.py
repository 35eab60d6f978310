"""The leak triage queue and its allow rules."""

from __future__ import annotations

from ninja import Schema
from pydantic import Field


class TriageItemOut(Schema):
    save: str
    viewer_id: str
    viewer_name: str
    section: str
    kind: str
    kind_words: str = Field(description="the kind as a page says it")
    text: str
    entity_id: str | None
    entity_name: str | None
    count: int
    context_before: str
    context_after: str
    likely_description: bool
    state: str = Field(description="open, or accepted as expected by an editor")


class TriageFacetOut(Schema):
    name: str
    values: list[tuple[str, str, int]] = Field(description="(value, words, findings)")
    more: bool


class TriageOut(Schema):
    items: list[TriageItemOut]
    total: int
    open: int
    accepted: int
    next_cursor: str | None = Field(description="pass as ?cursor= for the next page")
    facets: list[TriageFacetOut]
    pending: dict[str, int] = Field(description="save -> viewers not scanned yet")


class TriageKeyIn(Schema):
    save: str
    viewer_id: str
    section: str
    kind: str
    text: str


class TriageBulkIn(Schema):
    keys: list[TriageKeyIn] = Field(min_length=1, max_length=500)
    reason: str = Field("", max_length=2000, description="required to accept")


class TriageBulkOut(Schema):
    done: list[TriageKeyIn]
    skipped: list[TriageKeyIn] = Field(description="already in the state asked for")


class AllowRuleIn(Schema):
    word: str = Field(min_length=1, max_length=200)
    entity_id: str = Field(min_length=1)
    reason: str = Field(min_length=1, max_length=2000)
    save: str = Field("", description="empty: every save")
    viewer_id: str = Field("", description="empty: every viewer (a viewer needs its save)")


class AllowRuleOut(Schema):
    id: int
    word: str
    entity_id: str
    save: str | None
    viewer_id: str | None
    scope: str
    reason: str
    created_by: str | None
    created_at: str
    revoked_by: str | None
    revoked_at: str | None


class AllowRuleMadeOut(AllowRuleOut):
    findings_removed: int
