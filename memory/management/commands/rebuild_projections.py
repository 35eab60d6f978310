"""manage.py rebuild_projections [--verify]: the rebuild door (never a timer; seed 003, rule 7)."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand

from memory.engine.projections import rebuild, verify


class Command(BaseCommand):
    help = (
        "Re-derive every session and episode from the canonical memory rows. With --verify, "
        "write nothing: fold afresh, compare with the stored sessions, exit 1 on drift."
    )

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--verify", action="store_true", help="compare only; exit 1 on drift")
        parser.add_argument(
            "--json", action="store_true", help="print the result as one JSON object"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if options["verify"]:
            result = verify()
            if options["json"]:
                self.stdout.write(json.dumps(result.as_dict()))
            else:
                self.stdout.write(
                    f"{result.sessions} sessions, {result.identical} identical, "
                    f"{len(result.drift)} drifted fields"
                )
                for item in result.drift:
                    self.stdout.write(json.dumps(item))
            if result.drift:
                raise SystemExit(1)
            return
        rebuilt = rebuild()
        if options["json"]:
            self.stdout.write(
                json.dumps(
                    {
                        "sessions": rebuilt.sessions,
                        "rows_folded": rebuilt.rows_folded,
                        "episodes": rebuilt.episodes,
                    }
                )
            )
        else:
            self.stdout.write(
                f"rebuilt {rebuilt.sessions} sessions and {rebuilt.episodes} episodes "
                f"from {rebuilt.rows_folded} rows"
            )
