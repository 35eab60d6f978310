"""manage.py rebuild_projections [--verify]: the rebuild door (never a timer; seed 003, rule 7)."""

from __future__ import annotations

import json
from typing import Any

from memory.active_save import use
from memory.engine import audit
from memory.engine.saves import current_save_name, live_saves
from memory.engine.upkeep import rebuild_all, verify_all
from memory.management.commands._base import OmniaCommand, progress_bar
from memory.models import BufferEntry


class Command(OmniaCommand):
    save_scope = "every"
    help = (
        "Re-derive every session, episode and stored leak finding; --verify only compares "
        "(exit 1 on drift)."
    )
    examples = ("", "--verify", "--verify --json")

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--verify", action="store_true", help="compare only; exit 1 on drift")
        parser.add_argument(
            "--json", action="store_true", help="print the result as one JSON object"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        # One save with --save; else each save in turn, each report headed by its save's
        # name when there are several. Exit 1 when any save drifted.
        targets = [None] if self.save is not None else live_saves()
        drifted = False
        for save in targets:
            if save is None:
                drifted |= self._one(options)
                continue
            if len(targets) > 1 and not options["json"]:
                self.stdout.write(f"save {save.name}:")
            with use(save):
                drifted |= self._one(options, save.name if len(targets) > 1 else None)
        if drifted:
            raise SystemExit(1)

    def _one(self, options: dict[str, Any], label: str | None = None) -> bool:
        """Rebuild or verify the active save; True when it drifted."""
        self._label = label
        verifying = options["verify"]
        total = BufferEntry.objects.count()
        with progress_bar("verify" if verifying else "rebuild", "rows", total=total) as bar:
            if verifying:
                result, findings = verify_all(progress=bar.update)
            else:
                rebuilt, refreshed = rebuild_all(progress=bar.update)
        if verifying:
            self._report_verify(result, findings, options["json"])
            return bool(result.drifted or findings.drift)
        audit.record(
            "projections.rebuild",
            f"save:{current_save_name()}",
            actor=audit.cli_actor(),
            after={
                "rows_folded": rebuilt.rows_folded,
                "sessions": rebuilt.sessions,
                "episodes": rebuilt.episodes,
            },
        )
        if options["json"]:
            self.stdout.write(
                json.dumps(
                    {
                        **self._save_key(),
                        "sessions": rebuilt.sessions,
                        "rows_folded": rebuilt.rows_folded,
                        "episodes": rebuilt.episodes,
                        "rows_written": rebuilt.rows_written,
                        "leak_viewers_scanned": refreshed.viewers_scanned,
                        "problems": rebuilt.problems,
                        "rows_moved": rebuilt.rows_moved,
                    }
                )
            )
        else:
            self.stdout.write(
                f"rebuilt {rebuilt.sessions} sessions and {rebuilt.episodes} episodes "
                f"from {rebuilt.rows_folded} rows ({rebuilt.rows_written} written: the rest "
                "were stored as the fold gives them); leak findings of "
                f"{refreshed.viewers_scanned} viewer(s) rescanned"
                + (f"; {rebuilt.problems} row(s) quarantined" if rebuilt.problems else "")
                + (
                    f"; {rebuilt.rows_moved} row(s) moved to their shard"
                    if rebuilt.rows_moved
                    else ""
                )
            )
        return False

    def _save_key(self) -> dict[str, str]:
        return {"save": self._label} if self._label else {}

    def _report_verify(self, result: Any, findings: Any, as_json: bool) -> None:
        if as_json:
            self.stdout.write(
                json.dumps(
                    {**self._save_key(), **result.as_dict(), "leak_findings": findings.as_dict()}
                )
            )
            return
        self.stdout.write(
            f"{result.sessions} sessions, {result.identical} identical, "
            f"{len(result.drift)} drifted fields"
        )
        for item in result.drift:
            self.stdout.write(json.dumps(item))
        self.stdout.write(
            f"{result.episodes} episodes, {result.episodes_identical} identical, "
            f"{len(result.episode_drift)} drifted fields"
        )
        for item in result.episode_drift:
            self.stdout.write(json.dumps(item, default=str))
        self.stdout.write(
            f"shards: {result.shards_configured} configured, rows partitioned for "
            f"{result.shards_stored}, {result.stranded_rows} row(s) in no visited shard"
        )
        self.stdout.write(
            f"{result.problems} row(s) the fold cannot fold, {result.problems_recorded} "
            f"recorded as problems, {len(result.problem_drift)} differing"
        )
        for item in result.problem_drift:
            self.stdout.write(json.dumps(item))
        self.stdout.write(
            f"leak findings: {findings.viewers} viewers compared, {findings.identical} "
            f"identical to a fresh scan, {len(findings.drift)} drifted, "
            f"{findings.behind} not rescanned yet"
        )
        for item in findings.drift:
            self.stdout.write(json.dumps(item))
