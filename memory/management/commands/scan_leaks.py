from __future__ import annotations

import csv
import json

from memory.engine.aliases import MAX_LABEL_CHARS
from memory.engine.errors import NotFound
from memory.engine.leaks import stored
from memory.engine.leaks.accepted import acceptances, split
from memory.engine.leaks.world_scan import (
    CSV_HEADER,
    ScanFinding,
    all_findings,
    count_viewers,
    scan_world,
    viewers_by_world,
)
from memory.engine.spreadsheet import safe_row
from memory.management.commands._base import OmniaCommand, progress_bar, refuse
from memory.selectors.labels import suspicious_labels


class Command(OmniaCommand):
    save_scope = "one"
    save_hint = ("viewer_id", "world_id")
    help = (
        "Report epistemic leaks in every viewer's prompt: system ids, unknown true names, "
        "private values."
    )
    examples = (
        "",
        "--viewer npc-maren",
        "--format csv | head",
        "--world harbor-town --fresh --fail-on-leak",
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("--viewer", dest="viewer_id", help="scan only this viewer")
        parser.add_argument("--world", dest="world_id", help="scan only this world's viewers")
        parser.add_argument("--format", choices=["text", "json", "csv"], default="text")
        parser.add_argument(
            "--fail-on-leak", action="store_true", help="exit 1 when anything is found"
        )
        parser.add_argument(
            "--fresh",
            action="store_true",
            help="scan every prompt from scratch; read and write no stored finding (without it, "
            "the stored findings are read, first rescanning the viewers whose inputs moved)",
        )

    def handle(
        self,
        *args,
        viewer_id: str | None,
        world_id: str | None,
        format: str,
        fail_on_leak: bool,
        fresh: bool = False,
        **options,
    ) -> None:
        if fresh:
            findings, viewers = self._fresh(world_id, viewer_id)
        else:
            findings, viewers = self._stored(world_id, viewer_id)
        accepted = acceptances({f.viewer_id for f in findings})
        open_, ignored = split(findings, accepted)
        self._report(findings, accepted, viewers, format)
        if ignored:
            # Said where a person reads it, and on stderr for json/csv so stdout stays data.
            line = f"ignored {len(ignored)} accepted finding(s)"
            (self.stdout if format == "text" else self.stderr).write(line)
        self._suspicious(viewer_id, format)
        if fail_on_leak and open_:
            raise SystemExit(1)

    def _suspicious(self, viewer_id: str | None, format: str) -> None:
        """Stored labels worth a second look (not leaks: nothing the prompt gives away), counted
        beside the report, where a person reads it (stderr for json/csv, as above)."""
        found = [s for s in suspicious_labels() if viewer_id is None or s.viewer_id == viewer_id]
        if not found:
            return
        out = self.stdout if format == "text" else self.stderr
        out.write(
            f"suspicious labels: {len(found)} (empty, over {MAX_LABEL_CHARS} characters, or "
            "another entity's true name)"
        )
        if format == "text":
            for s in found:
                out.write(f"  {s.viewer_id} -> {s.target_id} {s.label!r}: {'; '.join(s.reasons)}")

    def _stored(self, world_id: str | None, viewer_id: str | None) -> tuple[list[ScanFinding], int]:
        try:
            groups = viewers_by_world(world_id, viewer_id)
        except NotFound as exc:
            raise refuse(str(exc)) from None
        ids = [obj.id for objs in groups.values() for obj in objs]
        stored.refresh(ids)
        kept = stored.stored_findings(ids)
        return [f for viewer in ids for f in kept[viewer]], len(ids)

    def _fresh(self, world_id: str | None, viewer_id: str | None) -> tuple[list[ScanFinding], int]:
        try:
            total = count_viewers(world_id, viewer_id=viewer_id)
            # The bar is for a person watching a large world; pipes and CI logs get none.
            with progress_bar("scan", "viewers", total=total) as bar:
                scans = scan_world(world_id, viewer_id=viewer_id, progress=bar.update)
        except NotFound as exc:
            raise refuse(str(exc)) from None
        return all_findings(scans), len(scans)

    def _report(
        self, findings: list[ScanFinding], accepted: dict, viewers: int, format: str
    ) -> None:
        def state(f: ScanFinding) -> tuple[str, str | None]:
            done = accepted.get(f.key)
            return ("accepted", done.reason) if done else ("open", None)

        if format == "json":
            items = []
            for f in findings:
                label, reason = state(f)
                items.append({**f.to_dict(), "state": label, "accepted_reason": reason})
            self.stdout.write(json.dumps(items, ensure_ascii=False, indent=2))
        elif format == "csv":
            writer = csv.writer(self.stdout, lineterminator="\n")
            writer.writerow(CSV_HEADER)
            for f in findings:
                label, reason = state(f)
                writer.writerow(safe_row(f.csv_row(label, reason or "")))
        else:
            for f in findings:
                g = f.finding
                label, reason = state(f)
                times = f" x{f.count}" if f.count > 1 else ""
                mark = f" [accepted: {reason}]" if reason is not None else ""
                self.stdout.write(
                    f"{f.viewer_id} [{f.section}] {g.kind} {g.start}-{g.end} {g.text!r}{times}: "
                    f"{g.reason}{mark}"
                )
            self.stdout.write(f"{len(findings)} finding(s) in {viewers} viewer prompt(s)")
