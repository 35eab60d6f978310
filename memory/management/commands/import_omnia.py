from __future__ import annotations

import sys

from django.core.management.base import BaseCommand
from tqdm import tqdm

from memory.engine import audit
from memory.engine.projections.worker import projection_status
from memory.engine.upkeep import run_upkeep
from memory.management.commands._base import refuse
from memory.worlds.omnia_import import import_omnia
from memory.worlds.report import WorldImportError

# The first upkeep after loading 1,000,000 rows of 2,000 viewers took 25.0 s (bench_viewer.py).
ROWS_PER_SECOND = 40_000


class Command(BaseCommand):
    help = "Import an omnia SQLite world file (either era) into the inspector, atomically."

    def add_arguments(self, parser) -> None:
        parser.add_argument("path")
        parser.add_argument(
            "--fold",
            action="store_true",
            help="then fold the new rows into the projections and rescan the leak findings",
        )

    def handle(self, *args, path: str, **options) -> None:
        bar = tqdm(
            unit=" rows", desc="buffer_entries", disable=not sys.stderr.isatty(), file=sys.stderr
        )
        digest = audit.restated_digest()
        try:
            report = import_omnia(path, progress=bar.update)
        except WorldImportError as exc:
            raise refuse(f"refused, nothing imported: {exc}") from None
        finally:
            bar.close()
        self.stdout.write(report.summary())
        audit.record_import("world.import", report, audit.cli_actor(), digest_before=digest)
        behind = projection_status()["lag_rows"]
        if not behind:
            return
        if options.get("fold"):
            result = run_upkeep()
            if audit.cycle_changed(result):
                audit.record(
                    "projections.cycle", "projections", actor=audit.cli_actor(),
                    after=result.as_dict(),
                )  # fmt: skip
            self.stdout.write(
                f"folded {result.rows_folded} rows into {result.sessions_written} sessions; "
                f"leak findings rescanned for {result.leak_viewers_scanned} viewer(s)"
            )
            return
        # A measured rate, not a promise: bench/README.md (1M rows, 2,000 viewers, 2 cores).
        self.stdout.write(
            f"{behind} rows are not in the projections yet: run `manage.py run_projections` "
            f"(about {max(1, round(behind / ROWS_PER_SECOND))} s here at the benchmarked "
            f"{ROWS_PER_SECOND:,} rows/s), or import with --fold"
        )
