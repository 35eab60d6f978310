from __future__ import annotations

import os
import signal
import sys
import time
import traceback

from memory.engine import audit
from memory.engine.errors import Conflict, InvalidInput
from memory.management.commands._base import OmniaCommand, command_line, refuse
from memory.worlds.live import Follower, follow
from memory.worlds.report import WorldImportError


class Command(OmniaCommand):
    help = "Follow an omnia save while a game writes it: each change applied as it lands; resumes."
    examples = (
        "var/live.sqlite",
        "var/live.sqlite --as tuesday-playtest --interval 0.5",
        "var/live.sqlite --once",
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("path", help="the omnia save a running game writes")
        parser.add_argument(
            "--as",
            dest="name",
            default="",
            metavar="NAME",
            help="the save to feed (default: the file's name without its extension); a new game "
            "at the path replaces it as import_omnia --replace would",
        )
        parser.add_argument(
            "--interval", type=float, default=0.5, help="seconds between looks at the file"
        )
        parser.add_argument(
            "--batch-rows",
            type=int,
            default=5000,
            help="new rows read per table per batch (bounds one read transaction)",
        )
        parser.add_argument(
            "--once", action="store_true", help="apply what is there now, then stop"
        )

    def handle(self, *args, path: str, **options) -> None:
        interval = options["interval"]
        if not 0 < interval <= 3600:
            raise refuse("--interval must be more than 0 and at most 3600 seconds")
        if options["batch_rows"] < 1:
            raise refuse("--batch-rows must be at least 1")
        stop: list[int] = []

        def request_stop(signum, _frame) -> None:
            stop.append(signum)  # the loop ends after the batch in hand

        signal.signal(signal.SIGTERM, request_stop)
        signal.signal(signal.SIGINT, request_stop)
        try:
            follower = Follower(
                path,
                name=options["name"],
                batch_rows=options["batch_rows"],
                actor=audit.cli_actor(),
                command=command_line(),
            )
            follower.open()  # refuses a file that is missing or no omnia world, up front
        except (WorldImportError, InvalidInput, Conflict) as exc:
            raise refuse(f"refused: {exc}") from None
        started = time.monotonic()
        totals = {"batches": 0, "rows": 0}

        def report(result) -> None:
            totals["batches"] += 1
            totals["rows"] += sum(result.added.values())
            sys.stderr.write(
                f"[{time.monotonic() - started:7.1f}s] batch {follower.state.batches}: "
                f"{result.summary()}; lag {result.lag_s:.2f} s; "
                f"{totals['rows']} rows in {totals['batches']} batches\n"
            )
            sys.stderr.flush()

        def on_error(exc) -> None:
            sys.stderr.write(f"waiting: {exc}\n")
            if os.environ.get("OMNIA_LIVE_TRACE"):
                traceback.print_exception(exc, file=sys.stderr)

        try:
            if options["once"]:
                while (result := follower.tick()) is not None:
                    report(result)
                    if follower.seen_version is not None:
                        break
            else:
                follow(
                    follower,
                    interval=interval,
                    should_stop=lambda: bool(stop),
                    report=report,
                    on_error=on_error,
                )
        except (WorldImportError, Conflict) as exc:
            raise refuse(f"refused: {exc}") from None
        finally:
            follower.close()
        self.stdout.write(
            f"{path}: save {follower.name!r}, {totals['rows']} rows in {totals['batches']} "
            f"batches; follow state kept (version {follower.state.version})"
        )
