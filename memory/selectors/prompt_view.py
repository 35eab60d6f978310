"""A viewer's prompt context cut at its leak findings: the prompt page and its JSON twin."""

from __future__ import annotations

from dataclasses import dataclass, field

from memory.engine.knowledge import Viewer, world_knowledge
from memory.engine.leaks.standing import current_findings, standing
from memory.engine.leaks.world_scan import scan_viewer, scan_viewer_at
from memory.engine.prompt import prompt_context
from memory.selectors.leaks import with_state
from memory.selectors.moments import finding_key, first_moments
from memory.selectors.pair import followed, history_note


@dataclass(frozen=True)
class Segment:
    """A run of prompt text; `finding` is set when the run is a leak (with its list number)."""

    text: str
    finding: dict | None = None
    number: int | None = None
    start: int | None = None  # the anchor `leak-at-<start>` the leak report links to


def highlight(text: str, findings: list[dict]) -> list[Segment]:
    """Cut the prompt at every occurrence of each finding (numbered as the findings are);
    overlapping occurrences keep the earlier span."""
    spans = [
        (occurrence["start"], occurrence["end"], finding, number)
        for number, finding in enumerate(findings, 1)
        for occurrence in finding.get("occurrences") or [finding]
    ]
    segments: list[Segment] = []
    at = 0
    for start, end, finding, number in sorted(spans, key=lambda s: (s[0], -s[1])):
        if start < at or not 0 <= start < end <= len(text):
            continue
        if start > at:
            segments.append(Segment(text[at:start]))
        segments.append(Segment(text[start:end], finding, number, start))
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
    at: str | None = None  # the moment asked for; None: now
    aliases_note: str | None = None  # at a moment: where its aliases come from, in words
    # Where omnia's lines are wrong without leaking (issue 30): each with its line cut at the
    # flaw (`before`, `text`, `after`) for the page to mark.
    flaws: list[dict] = field(default_factory=list)


def _cut_flaws(flaws: list[dict]) -> list[dict]:
    out = []
    for flaw in flaws:
        line, start, end = flaw["line"], flaw["start"], flaw["end"]
        out.append({**flaw, "before": line[:start], "after": line[end:]})
    return out


def prompt_view(viewer: Viewer, at: str | None = None) -> PromptView:
    """The viewer's prompt context with its leak findings (one per distinct leak, each with
    every occurrence, and the first moment it is in the prompt), cut into highlightable runs:
    the stored findings when the viewer's are current (no automaton to build for the world),
    else a fresh scan. `at` (clock.world_time_at's form): the prompt as it stood at that
    moment, scanned here and never stored."""
    knowledge = world_knowledge(viewer.obj.world_id)  # read once: the probes build on it too
    if at is not None:
        scan = scan_viewer_at(viewer, at, knowledge)
        prompt, found = scan.prompt, scan.findings
    elif stored_is_current(viewer.id):
        prompt = prompt_context(viewer, knowledge)
        found = current_findings(viewer.id).get(viewer.id, [])
    else:
        scan = scan_viewer(viewer.id, knowledge)
        prompt, found = scan.prompt, scan.findings
    findings = with_state(
        sorted((f.to_dict() for f in found), key=lambda f: (f["start"], -f["end"])), found
    )
    firsts = first_moments(viewer, found, at, knowledge)
    for f in findings:
        first = firsts.get(finding_key(f["section"], f["kind"], f["text"], f["entity_id"]))
        f["first_at"] = first.at if first else None
        f["first_line"] = first.line if first else None
    text = prompt.text
    note = history_note(followed()) if at is not None else None
    return PromptView(
        text,
        list(prompt.sections),
        findings,
        highlight(text, findings),
        at,
        note,
        _cut_flaws(prompt.flaws()),
    )


def stored_is_current(viewer_id: str) -> bool:
    return standing(viewer_id).behind == []
