"""A viewer's prompt context cut at its leak findings, and the findings of every viewer."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from memory.engine.knowledge import Viewer, get_viewer
from memory.engine.leaks.stored import scan_fresh, scan_state, stored_findings
from memory.engine.leaks.world_scan import FINDING_KINDS, ScanFinding, scan_viewer
from memory.engine.prompt import prompt_context


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
    """The viewer's prompt context with its leak findings, cut into highlightable runs: the
    stored findings when the viewer's are current (no automaton to build for the world),
    else a fresh scan."""
    if stored_is_current(viewer.id):
        prompt = prompt_context(viewer)
        found = stored_findings([viewer.id])[viewer.id]
    else:
        scan = scan_viewer(viewer.id)
        prompt, found = scan.prompt, scan.findings
    findings = sorted((f.to_dict() for f in found), key=lambda f: (f["start"], -f["end"]))
    text = prompt.text
    return PromptView(text, list(prompt.sections), findings, highlight(text, findings))


def stored_is_current(viewer_id: str) -> bool:
    return scan_state([viewer_id]).behind == []


# A page rescans in memory at most this many viewers whose stored findings are behind (a
# just-loaded world, a write not yet folded); past it they are listed as pending, and the
# next projection cycle (run_projections) stores them. Reads never write.
FRESH_BUDGET = 50


@dataclass(frozen=True)
class LeakReport:
    findings: dict[str, list[ScanFinding]]  # viewer -> its findings, for every viewer known
    pending: list[str]  # viewers whose findings are behind and were not rescanned


def leak_report(viewer_id: str | None = None) -> LeakReport:
    """Stored findings for the viewers whose inputs have not moved since their scan; a fresh
    in-memory scan for the few that have; the rest pending."""
    if viewer_id is not None:
        get_viewer(viewer_id)  # NotFound for an unknown id
    state = scan_state([viewer_id] if viewer_id is not None else None)
    findings = stored_findings(state.up_to_date)
    behind = state.behind
    rescanned, pending = behind[:FRESH_BUDGET], behind[FRESH_BUDGET:]
    findings.update(scan_fresh(rescanned))
    for viewer in rescanned:
        findings.setdefault(viewer, [])
    return LeakReport(findings=findings, pending=pending)


def leak_findings(*, viewer_id: str | None = None, kind: str | None = None) -> list[dict]:
    """Every finding in every viewer's prompt, ordered by viewer then offset."""
    report = leak_report(viewer_id)
    found = [f.to_dict() for v in report.findings for f in report.findings[v]]
    if kind is not None:
        found = [f for f in found if f["kind"] == kind]
    return sorted(found, key=lambda f: (f["viewer_id"], f["start"], f["end"], f["kind"]))


def leak_kinds() -> tuple[str, ...]:
    return FINDING_KINDS


def leak_counts(report: LeakReport | None = None) -> dict[str, dict[str, int]]:
    """viewer id -> kind -> findings (zeros kept), over every viewer whose findings are known."""
    report = report or leak_report()
    counts: dict[str, dict[str, int]] = {}
    for viewer in sorted(report.findings):
        found = Counter(f.finding.kind for f in report.findings[viewer])
        counts[viewer] = {kind: found[kind] for kind in FINDING_KINDS}
    return counts
