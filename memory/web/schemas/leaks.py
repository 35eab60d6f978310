"""The prompt and its leak findings."""

from __future__ import annotations

from ninja import Schema
from pydantic import Field


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
    likely_description: bool = Field(
        description='a readable id that is an ordinary word, written as a description ("the '
        'keeper") at every occurrence: still a finding, likely harmless'
    )
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
