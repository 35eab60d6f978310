"""manage.py run_projections: one projection cycle, or with --loop a worker that runs until stopped."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import CommandError
from django.db import DatabaseError

from memory.engine import audit
from memory.engine.projections import CycleResult
from memory.engine.projections.worker import (
    StopFlag,
    describe,
    is_read_only_error,
    lag_every_save,
    parse_shards,
    projection_status,
    run_loop,
    shard_list,
)
from memory.engine.upkeep import run_upkeep, run_upkeep_every_save
from memory.management.commands._base import OmniaCommand, progress_bar


class Command(OmniaCommand):
    save_scope = "every"
    help = (
        "Fold the memory rows written since the last cycle into sessions and episodes; "
        "--loop keeps at it."
    )
    examples = ("", "--json", "--loop --poll 5", "--loop --shards 0,1")

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument(
            "--json", action="store_true", help="print the result as one JSON object"
        )
        parser.add_argument(
            "--loop",
            action="store_true",
            help="run cycles until SIGTERM/SIGINT (the current cycle finishes, exit 0), woken "
            "by PostgreSQL NOTIFY after writes, else every --poll seconds",
        )
        parser.add_argument(
            "--poll", type=float, default=5.0, help="seconds between cycles when idle (--loop)"
        )
        parser.add_argument(
            "--settle",
            type=float,
            default=0.2,
            help="seconds to wait after a NOTIFY before folding, so a stream of writes is "
            "folded in batches (--loop; 0 folds at once)",
        )
        parser.add_argument(
            "--shards", default="", help="comma-separated shard numbers to fold (default: all)"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        # A database that refuses writes (read-only file, query_only, a replica) is an operator
        # problem with a one-line answer, not a traceback; a lost connection inside --loop is
        # retried by the loop itself.
        try:
            self._handle(options)
        except DatabaseError as exc:
            if is_read_only_error(exc):
                raise CommandError(
                    "the database is read-only; projections were not updated "
                    f"(nothing written): {exc}"
                ) from None
            raise CommandError(f"database error, nothing written: {exc}") from None

    def _handle(self, options: dict[str, Any]) -> None:
        try:
            shards = parse_shards(options["shards"])
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        if options["poll"] <= 0:
            raise CommandError("--poll must be a positive number of seconds")
        if options["settle"] < 0:
            raise CommandError("--settle must be 0 or a positive number of seconds")
        if options["loop"]:
            self._loop(shards, options)
            return
        # With --save that save; else every save in turn (the results summed).
        one = self.save is not None
        behind = projection_status()["lag_rows"] if one else lag_every_save()
        with progress_bar("fold", "rows", total=behind) as bar:
            upkeep = run_upkeep if one else run_upkeep_every_save
            result = upkeep(shards=shards, progress=bar.update)
        # One-shot runs are a person's write and audited; the --loop worker is the automatic
        # fold (derived rows only) and would write one row a second.
        if audit.cycle_changed(result):
            audit.record(
                "projections.cycle", "projections", actor=audit.cli_actor(), after=result.as_dict()
            )
        if options["json"]:
            extra = {"problems_found": result.problems_found} if result.problems_found else {}
            if result.repartitioned:
                extra["repartitioned"] = True
            if result.failed_saves:
                extra["failed_saves"] = result.failed_saves
            self.stdout.write(json.dumps({**result.as_dict(), **extra}))
            self._fail_on_failed_saves(result)
            return
        if result.repartitioned:
            self.stdout.write(
                "OMNIA_PROJECTION_SHARDS changed: rows re-partitioned and every projection "
                "re-derived in one transaction"
            )
        self.stdout.write(
            f"folded {result.rows_folded} rows into {result.sessions_written} sessions "
            f"({result.episodes_written} episodes written); rows visited {result.rows_visited}; "
            f"leak findings rescanned for {result.leak_viewers_scanned} viewer(s)"
        )
        if result.problems_found:
            self.stdout.write(
                f"{result.problems_found} row(s) could not be folded: quarantined "
                "(listed on the overview and at /api/problems)"
            )
        if result.shards_skipped:
            self.stdout.write(f"shards held by another worker: {result.shards_skipped}")
        self._fail_on_failed_saves(result)

    @staticmethod
    def _fail_on_failed_saves(result: CycleResult) -> None:
        if result.failed_saves:
            raise CommandError(
                f"upkeep failed for {len(result.failed_saves)} save(s), the others were "
                f"updated: {'; '.join(result.failed_saves)}"
            )

    def _loop(self, shards: list[int] | None, options: dict[str, Any]) -> None:
        stop = StopFlag()
        stop.install()
        as_json = options["json"]

        def report(result: CycleResult) -> None:
            # Idle cycles stay quiet so a long-running worker's log is one line per real fold.
            if not result.rows_folded:
                return
            if as_json:
                self.stdout.write(json.dumps(result.as_dict()))
            else:
                self.stdout.write(describe(result))
            self.stdout.flush()

        # One line once the signal handlers are in place: from here SIGTERM finishes the
        # cycle and exits 0 (before it, the process is still starting and simply dies).
        if as_json:
            self.stdout.write(
                json.dumps({"started": True, "shards": shard_list(shards), "poll": options["poll"]})
            )
        else:
            self.stdout.write(
                f"projection worker: shards {shard_list(shards)}, poll {options['poll']}s"
            )
        self.stdout.flush()
        stats = run_loop(
            poll=options["poll"],
            shards=shards,
            stop=stop,
            on_cycle=report,
            settle=options["settle"],
            cycle=run_upkeep if self.save is not None else run_upkeep_every_save,
        )
        summary = {
            "stopped_by": stop.signal,
            "cycles": stats.cycles,
            "rows_folded": stats.rows_folded,
            "wakeups": stats.wakeups,
            "errors": stats.errors,
        }
        self.stdout.write(
            json.dumps(summary) if as_json else f"projection worker stopped: {summary}"
        )
