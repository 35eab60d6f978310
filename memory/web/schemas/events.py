"""Events: one moment with every witness's line, labels and leaks."""

from __future__ import annotations

from ninja import Schema
from pydantic import Field


class LineLeakOut(Schema):
    kind: str = Field(description="system_id, unknown_name or private_attribute")
    start: int = Field(description="offset into the witness's line")
    end: int
    text: str
    entity_id: str | None
    attribute_name: str | None = None
    reason: str


class WitnessOut(Schema):
    viewer_id: str
    viewer_name: str = Field(description="the witness's true name, else its id")
    entry_id: str = Field(description="the witness's own buffer row")
    line: str | None = Field(description="the line exactly as the witness's buffer reads it")
    undeliverable: str | None
    retracted: bool
    location_id: str | None
    outcome: str | None
    labels: dict[str, str] = Field(
        description='participant id -> the label this witness uses ("you" for itself, '
        '"an unfamiliar figure" where it has none)'
    )
    label_kinds: dict[str, str] = Field(
        description="participant id -> self, true-name, alias or unfamiliar"
    )
    leaks: list[LineLeakOut] = Field(description="leak findings in this witness's line")


class ParticipantOut(Schema):
    id: str
    name: str
    called_differently: bool


class EventOut(Schema):
    event: str
    timestamp: str
    world_id: str | None
    kind: str | None
    actor_id: str | None
    places: list[str]
    participants: list[ParticipantOut]
    witnesses: list[WitnessOut]


class FoundWitnessOut(Schema):
    viewer_id: str
    viewer_name: str
    entry_id: str
    line: str | None
    undeliverable: str | None
    matched: bool = Field(description="this witness's line holds every word of the query")


class FoundEventOut(Schema):
    event: str
    timestamp: str
    witnesses: list[FoundWitnessOut]


class EventSearchOut(Schema):
    q: str
    items: list[FoundEventOut] = Field(description="the matching events, newest first")
    older: str | None = Field(description="cursor for the next, older page (pass as `before`)")
    searched_to: str | None = Field(
        None, description="out of time: the moments searched reach back to this timestamp"
    )
    rows_visited: int


class PairLabelOut(Schema):
    label: str = Field(description="what the viewer called the target")
    until: str | None = Field(
        description="the world time of the change that replaced it (null: still so)"
    )


class PairItemOut(Schema):
    event: str = Field(description="the event id of this moment")
    witness_count: int
    entry_id: str = Field(description="the viewer's own buffer row")
    timestamp: str
    line: str | None = Field(description="the line as the viewer read it at the time")
    undeliverable: str | None
    label: str = Field(description="what the viewer called the target at the time")


class PairOut(Schema):
    viewer_id: str
    viewer_name: str
    target_id: str
    target_name: str
    labels: list[PairLabelOut] = Field(
        description="the viewer's labels for the target in play, oldest first"
    )
    history: str = Field(
        description="where the alias history comes from: a followed game's changes in play, "
        "or an imported save's last aliases alone"
    )
    items: list[PairItemOut] = Field(description="the moments both share, oldest first")
    newer: str | None = Field(description="cursor for the next, later page (pass as `after`)")
    older: str | None = Field(description="cursor for the page before (pass as `before`)")
