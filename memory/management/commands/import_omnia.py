from __future__ import annotations

from django.utils import timezone

from memory.engine.projections.worker import projection_status
from memory.engine.upkeep import run_upkeep
from memory.management.commands._base import (
    OmniaCommand,
    import_summary,
    progress_bar,
    refuse,
)
from memory.worlds.omnia_import import import_omnia
from memory.worlds.report import WorldImportError

# The first upkeep after loading 1,000,000 rows of 2,000 viewers took 25.0 s (bench_viewer.py).
ROWS_PER_SECOND = 40_000


class Command(OmniaCommand):
    help = "Import an omnia SQLite world file (either era), atomically; a re-import adds nothing."
    examples = (
        "path/to/omnia.sqlite",
        "path/to/omnia.sqlite --fold",
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("path", help="the omnia save: a SQLite file of either era")
        parser.add_argument(
            "--fold",
            action="store_true",
            help="then fold the new rows into the projections and rescan the leak findings",
        )

    def handle(self, *args, path: str, **options) -> None:
        started = timezone.now()
        with progress_bar("import", "rows") as bar:
            try:
                report = import_omnia(path, progress=bar.update)
            except WorldImportError as exc:
                raise refuse(f"refused, nothing imported: {exc}") from None
        self.stdout.write(import_summary(report, started))
        behind = projection_status()["lag_rows"]
        if not behind:
            return
        if options.get("fold"):
            with progress_bar("fold", "rows", total=behind) as bar:
                result = run_upkeep(progress=bar.update)
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
