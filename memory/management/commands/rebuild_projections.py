"""manage.py rebuild_projections [--verify]: the rebuild door (never a timer; seed 003, rule 7)."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand

from memory.engine import audit
from memory.engine.upkeep import rebuild_all, verify_all


class Command(BaseCommand):
    help = (
        "Re-derive every session, episode and stored leak finding. With --verify, write nothing: "
        "fold and scan afresh, compare with what is stored, exit 1 on drift."
    )

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--verify", action="store_true", help="compare only; exit 1 on drift")
        parser.add_argument(
            "--json", action="store_true", help="print the result as one JSON object"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if options["verify"]:
            result, findings = verify_all()
            if options["json"]:
                self.stdout.write(
                    json.dumps({**result.as_dict(), "leak_findings": findings.as_dict()})
                )
            else:
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
                    f"leak findings: {findings.viewers} viewers compared, {findings.identical} "
                    f"identical to a fresh scan, {len(findings.drift)} drifted, "
                    f"{findings.behind} not rescanned yet"
                )
                for item in findings.drift:
                    self.stdout.write(json.dumps(item))
            if result.drifted or findings.drift:
                raise SystemExit(1)
            return
        rebuilt, findings = rebuild_all()
        audit.record(
            "projections.rebuild",
            "projections",
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
                        "sessions": rebuilt.sessions,
                        "rows_folded": rebuilt.rows_folded,
                        "episodes": rebuilt.episodes,
                        "leak_viewers_scanned": findings.viewers_scanned,
                    }
                )
            )
        else:
            self.stdout.write(
                f"rebuilt {rebuilt.sessions} sessions and {rebuilt.episodes} episodes "
                f"from {rebuilt.rows_folded} rows; leak findings of {findings.viewers_scanned} "
                "viewer(s) rescanned"
            )
