from __future__ import annotations

import signal
import sqlite3
import sys
import time
from pathlib import Path

from django.core.management.base import CommandError

from memory.engine import audit
from memory.engine.errors import Conflict, InvalidInput
from memory.engine.saves import check_name, default_name
from memory.management.commands._base import OmniaCommand, command_line, refuse
from memory.worlds.live import Follower, SaveGone, follow, verify, waiting_for
from memory.worlds.live.exclusive import AlreadyFollowed, sole_follower
from memory.worlds.report import WorldImportError


class Command(OmniaCommand):
    help = "Follow an omnia save while a game writes it: each change applied as it lands; resumes."
    examples = (
        "var/live.sqlite",
        "var/live.sqlite --as tuesday-playtest --interval 0.5",
        "var/live.sqlite --once",
        "var/live.sqlite --verify",
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
        parser.add_argument(
            "--verify",
            action="store_true",
            help="compare the save with the file row by row, content and counts (writes "
            "nothing); exit 1 when they differ",
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

        def follower() -> Follower:
            try:
                return Follower(
                    path,
                    name=options["name"],
                    batch_rows=options["batch_rows"],
                    actor=audit.cli_actor(),
                    command=command_line(),
                )
            except (WorldImportError, InvalidInput, Conflict) as exc:
                raise refuse(f"refused: {exc}") from None

        if options["verify"]:  # reads only: beside a running follower is fine
            self._verify(self._open(follower(), options))
            return
        try:
            name = check_name(options["name"] or default_name(Path(path).resolve()))
        except InvalidInput as exc:
            raise refuse(f"refused: {exc}") from None
        try:
            with sole_follower(name):
                # Its state read under the lock: what the follower before it left, whole.
                self._follow(self._open(follower(), options), path, interval, stop, options)
        except AlreadyFollowed as exc:
            raise refuse(f"refused: {exc}") from None

    def _open(self, follower: Follower, options: dict) -> Follower:
        try:
            follower.open()  # refuses a file that is missing or no omnia world, up front
        except WorldImportError as exc:
            raise refuse(f"refused: {exc}") from None
        except sqlite3.DatabaseError as exc:
            # The game holding its file past our patience: the loop waits and says so; a
            # single look (--once, --verify) says so and stops.
            line = waiting_for(exc)
            if line is None:
                raise
            if options["once"] or options["verify"] or "lock" not in line:
                raise refuse(f"refused: {line.split('; waiting')[0]}") from None
        finally:
            follower.close()  # open again inside each look (nothing held between looks)
        return follower

    def _follow(self, follower: Follower, path: str, interval: float, stop: list, options: dict):
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

        def on_wait(line: str) -> None:
            sys.stderr.write(f"[{time.monotonic() - started:7.1f}s] {line}\n")
            sys.stderr.flush()

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
                    on_wait=on_wait,
                )
        except SaveGone as exc:
            if exc.applied is not None:
                report(exc.applied)
            raise refuse(f"stopped: {exc}") from None
        except (WorldImportError, Conflict) as exc:
            raise refuse(f"refused: {exc}") from None
        except sqlite3.DatabaseError as exc:  # --once: the file cannot be read now
            if (line := waiting_for(exc)) is None:
                raise
            raise refuse(f"refused: {line.split('; waiting')[0]}") from None
        finally:
            follower.close()
        self.stdout.write(
            f"{path}: save {follower.name!r}, {totals['rows']} rows in {totals['batches']} "
            f"batches; follow state kept (version {follower.state.version})"
        )

    def _verify(self, follower: Follower) -> None:
        if follower.save is None:
            raise refuse(f"refused: save {follower.name!r} does not follow this file yet")
        try:
            found = verify(follower.path, follower.save)
        except sqlite3.DatabaseError as exc:
            raise refuse(f"refused: {waiting_for(exc)}") from None
        finally:
            follower.close()
        compared = ", ".join(f"{n} {table}" for table, n in found.compared.items())
        if found.clean:
            self.stdout.write(
                f"{follower.path}: save {follower.name!r} holds the file, content for content "
                f"({compared})"
            )
            return
        differing = ", ".join(f"{n} {table}" for table, n in found.differences.items())
        for line in found.examples:
            self.stdout.write(line)
        raise CommandError(
            f"{follower.path}: save {follower.name!r} differs from the file: {differing} "
            f"(compared {compared})",
            returncode=1,
        )
