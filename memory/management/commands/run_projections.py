"""manage.py run_projections: one projection cycle (forward-only past each shard's watermark)."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand

from memory.projections import run_cycle


class Command(BaseCommand):
    help = "Fold every memory row written since the last cycle into its session and episode."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument(
            "--json", action="store_true", help="print the result as one JSON object"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        result = run_cycle()
        if options["json"]:
            self.stdout.write(json.dumps(result.as_dict()))
            return
        self.stdout.write(
            f"folded {result.rows_folded} rows into {result.sessions_written} sessions "
            f"({result.episodes_written} episodes written); rows visited {result.rows_visited}"
        )
        if result.shards_skipped:
            self.stdout.write(f"shards held by another worker: {result.shards_skipped}")
