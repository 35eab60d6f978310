from __future__ import annotations

import contextlib
import json
import signal
import sys

from memory.management.commands._base import OmniaCommand, refuse
from memory.worlds.standin import StandIn


class Command(OmniaCommand):
    help = "A game stand-in: write an omnia save the way omnia does, at a chosen rate (live demos)."
    examples = (
        "var/live.sqlite --rate 5 --rows 500",
        "var/live.sqlite --rate 100 --rows 2000 --seed 7 --json",
        "var/live.sqlite --rows 0 --plant-leak",
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("path", help="the save file to write (created when missing)")
        parser.add_argument(
            "--rate", type=float, default=5.0, help="buffer rows a second (0: flat out)"
        )
        parser.add_argument(
            "--rows", type=int, default=1000, help="buffer rows to write, then stop"
        )
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument(
            "--delete-every", type=int, default=25, help="a handoff delete every N turns (0: none)"
        )
        parser.add_argument(
            "--alias-every", type=int, default=10, help="a name learned every N turns (0: none)"
        )
        parser.add_argument(
            "--plant-leak", action="store_true", help="then write one row that leaks a true name"
        )
        parser.add_argument("--json", action="store_true", help="the report as JSON on stdout")

    def handle(self, *args, path: str, **options) -> None:
        if options["rate"] < 0 or options["rows"] < 0:
            raise refuse("--rate and --rows must not be negative")
        stop = []
        signal.signal(signal.SIGTERM, lambda *_: stop.append(True))
        try:
            game = StandIn(
                path,
                seed=options["seed"],
                delete_every=options["delete_every"],
                alias_every=options["alias_every"],
            )
        except Exception as exc:  # not a file we can write an omnia world into
            raise refuse(f"{path}: cannot write an omnia save here ({exc})") from None
        try:

            def progress(report) -> None:
                if sys.stderr.isatty() and report.turns % 20 == 0:
                    sys.stderr.write(f"\r{report.rows_written} rows written")

            # Ctrl-C stops the game, the report still comes
            with contextlib.suppress(KeyboardInterrupt):
                game.run(
                    options["rows"],
                    options["rate"],
                    should_stop=lambda: bool(stop),
                    on_turn=progress,
                )
            if options["plant_leak"]:
                game.plant_leak()
        finally:
            game.close()
        report = game.report.as_dict()
        if options["json"]:
            self.stdout.write(json.dumps(report))
        else:
            self.stdout.write(
                f"{path}: {report['rows_written']} rows in {report['turns']} turns, "
                f"{report['deletes']} deleted, {report['alias_changes']} names learned, "
                f"{report['ledger_written']} ledger entries; longest lock wait "
                f"{report['max_lock_wait_ms']:.1f} ms"
            )
