"""The prompt and its leak findings."""

from __future__ import annotations

from ninja import Schema
from pydantic import Field

from memory.web.schemas.common import DictOut


class PromptSectionOut(Schema):
    name: str
    text: str


class LeakOccurrenceOut(DictOut):
    start: int
    end: int
    source_id: str | None = Field(description="the stored row (buffer or long-term) the line is")


class LeakFindingOut(DictOut):
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


class PromptFindingOut(LeakFindingOut):
    first_at: str | None = Field(
        description="the world time of the first moment this leak is in the prompt (null: "
        "not found within the moments one request may ask)"
    )
    first_line: str | None = Field(description="the finding's line in the prompt of that moment")


class PromptFlawOut(Schema):
    kind: str = Field(description="unheld_label or grammar")
    start: int
    end: int
    text: str = Field(description="omnia's words")
    corrected: str = Field(description="what the corrected reading says there")
    section: str
    source_id: str = Field(description="the buffer row the line was read from")
    line: str = Field(description="the whole line, as omnia rendered it")
    line_offset: int = Field(description="where the line starts in `text`")


class PromptOut(Schema):
    viewer_id: str
    at: str | None = Field(
        None, description="the moment asked for (null: now); the context as it stood then"
    )
    aliases: str | None = Field(
        None, description="at a moment: where the aliases of that moment come from, in words"
    )
    text: str
    sections: list[PromptSectionOut]
    findings: list[PromptFindingOut] | None = Field(description="null while the scanner is missing")
    flaws: list[PromptFlawOut] = Field(
        default_factory=list,
        description="where omnia renders a line of this prompt wrongly without leaking (person, "
        "number, case, a label the viewer does not hold); offsets into that line",
    )


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
