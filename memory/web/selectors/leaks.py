"""A viewer's prompt context cut at its leak findings, and the findings of every viewer."""

from __future__ import annotations

from dataclasses import dataclass

from memory.engine.knowledge import Viewer
from memory.engine.leaks.world_scan import FINDING_KINDS, all_findings, scan_viewer, scan_world
from memory.engine.leaks.world_scan import leak_counts as leak_counts_of_world
from memory.web.selectors.viewers import list_worlds


@dataclass(frozen=True)
class Segment:
    """A run of prompt text; `finding` is set when the run is a leak (with its list number)."""

    text: str
    finding: dict | None = None
    number: int | None = None


def highlight(text: str, findings: list[dict]) -> list[Segment]:
    """Cut the prompt at each finding's offsets; overlapping findings keep the earlier span."""
    segments: list[Segment] = []
    at = 0
    for number, finding in enumerate(sorted(findings, key=lambda f: (f["start"], -f["end"])), 1):
        start, end = finding["start"], finding["end"]
        if start < at or not 0 <= start < end <= len(text):
            continue
        if start > at:
            segments.append(Segment(text[at:start]))
        segments.append(Segment(text[start:end], finding, number))
        at = end
    if at < len(text):
        segments.append(Segment(text[at:]))
    return segments


@dataclass
class PromptView:
    text: str
    sections: list
    findings: list[dict]
    segments: list[Segment]


def prompt_view(viewer: Viewer) -> PromptView:
    """The viewer's prompt context with its leak findings, cut into highlightable runs."""
    result = scan_viewer(viewer.id)
    findings = sorted((f.to_dict() for f in result.findings), key=lambda f: (f["start"], -f["end"]))
    text = result.prompt.text
    return PromptView(text, list(result.prompt.sections), findings, highlight(text, findings))


def leak_findings(*, viewer_id: str | None = None, kind: str | None = None) -> list[dict]:
    """Every finding in every viewer's prompt, ordered by viewer then offset."""
    found = [f.to_dict() for f in all_findings(scan_world(viewer_id=viewer_id))]
    if kind is not None:
        found = [f for f in found if f["kind"] == kind]
    return sorted(found, key=lambda f: (f["viewer_id"], f["start"], f["end"], f["kind"]))


def leak_kinds() -> tuple[str, ...]:
    return FINDING_KINDS


def leak_counts() -> dict[str, dict[str, int]]:
    """viewer id -> kind -> findings, over every loaded world."""
    counts: dict[str, dict[str, int]] = {}
    for world in list_worlds():
        counts.update(leak_counts_of_world(world.id))
    return dict(sorted(counts.items()))
