from __future__ import annotations

from memory.active_save import use
from memory.engine import audit
from memory.engine.errors import Conflict, InvalidInput
from memory.engine.projections.worker import projection_status
from memory.engine.saves import get_save
from memory.engine.upkeep import run_upkeep
from memory.management.commands._base import (
    OmniaCommand,
    add_save_arguments,
    command_line,
    import_summary,
    progress_bar,
    refuse,
)
from memory.worlds.omnia_import import import_omnia

# The first upkeep after loading 1,000,000 rows of 2,000 viewers took 25.0 s (bench_viewer.py).
ROWS_PER_SECOND = 40_000


class Command(OmniaCommand):
    help = "Import an omnia SQLite world file (either era) into a save of its own, atomically."
    examples = (
        "path/to/omnia.sqlite",
        "path/to/omnia.sqlite --as playthrough-2",
        "path/to/omnia.sqlite --as playthrough-1 --replace",
        "path/to/omnia.sqlite --fold",
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("path", help="the omnia save: a SQLite file of either era")
        add_save_arguments(parser)
        parser.add_argument(
            "--fold",
            action="store_true",
            help="then fold the new rows into the projections and rescan the leak findings",
        )

    def handle(self, *args, path: str, as_name: str | None, replace: bool, **options) -> None:
        actor = audit.cli_actor()
        with progress_bar("import", "rows") as bar:
            try:
                report = import_omnia(
                    path,
                    as_name=as_name,
                    replace=replace,
                    progress=bar.update,
                    command=command_line(),
                    actor=actor,
                )
            except (InvalidInput, Conflict) as exc:
                raise refuse(f"refused, nothing imported: {exc}") from None
        self.stdout.write(import_summary(report))
        audit.record_import("world.import", report, actor)
        if report.unchanged:
            return
        with use(get_save(report.save)):
            behind = projection_status()["lag_rows"]
            if not behind:
                return
            if options.get("fold"):
                with progress_bar("fold", "rows", total=behind) as bar:
                    result = run_upkeep(progress=bar.update)
                if audit.cycle_changed(result):
                    audit.record(
                        "projections.cycle", f"save:{report.save}", actor=actor,
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
