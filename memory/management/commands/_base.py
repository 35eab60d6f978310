"""What every command shares: a one-line description with examples under --help, refused
input as one clear line on stderr and exit status 2, and a progress bar for long work that
shows on a terminal and stays out of pipes and logs."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from django.core.checks import Tags
from django.core.management.base import BaseCommand, CommandError, DjangoHelpFormatter
from tqdm import tqdm

from memory.active_save import use
from memory.engine.errors import NotFound
from memory.engine.saves import AmbiguousSave, resolve_save
from memory.models import Save
from memory.worlds.report import ImportReport


def refuse(message: str) -> CommandError:
    return CommandError(message, returncode=2)


class _HelpFormatter(DjangoHelpFormatter, argparse.RawDescriptionHelpFormatter):
    """Django's option order, with the examples kept line by line."""


class OmniaCommand(BaseCommand):
    """A command whose --help ends with worked examples (`examples`, one command a line).

    `save_scope` says which save it works in, resolved once, by name, before `handle` runs
    (`self.save`, active while it runs). "one": `--save NAME`; without it the only save,
    else the one save holding the object named by the `save_hint` option (options naming a
    viewer or world id); several candidates are refused, listed, exit 2. "every": with
    `--save`, that save; without it `self.save` is None and the command loops over every
    save itself. None: no save is active; the command names the ones it means.

    A command never works in a save its caller happened to have active (a test, a shell):
    only in the one it resolved.
    """

    # A command checks the models it reads and writes, not the web: the URL checks import
    # every view and the API's schemas, a third of a command's start-up (0.35 of 1.0 s CPU,
    # measured), paid by every script and test that runs one. `manage.py check` and the
    # server's start-up still run them all; tests/test_cli.py runs every check clean.
    requires_system_checks = [Tags.models]
    examples: tuple[str, ...] = ()
    save_scope: str | None = None
    save_hint: tuple[str, ...] = ()
    save: Save | None = None

    def create_parser(self, prog_name: str, subcommand: str, **kwargs: Any):
        name = os.path.basename(prog_name)
        lines = [f"  {name} {subcommand} {example}".rstrip() for example in self.examples]
        kwargs.setdefault("epilog", "examples:\n" + "\n".join(lines) if lines else None)
        kwargs.setdefault("formatter_class", _HelpFormatter)
        parser = super().create_parser(prog_name, subcommand, **kwargs)
        if self.save_scope == "one":
            parser.add_argument(
                "--save", help="the save to read (default: the only one, or the one holding the id)"
            )
        elif self.save_scope == "every":
            parser.add_argument("--save", help="only this save (default: every save in turn)")
        return parser

    def execute(self, *args: Any, **options: Any):
        self.save = self._resolve(options)
        with use(self.save):
            return super().execute(*args, **options)

    def _resolve(self, options: dict[str, Any]) -> Save | None:
        if self.save_scope is None or (self.save_scope == "every" and not options.get("save")):
            return None
        hint = next((options[o] for o in self.save_hint if options.get(o)), None)
        try:
            return resolve_save(options.get("save"), object_id=hint)
        except AmbiguousSave as exc:
            raise refuse(f"{exc}: add --save NAME") from None
        except NotFound as exc:
            raise refuse(str(exc)) from None


def progress_bar(desc: str, unit: str, total: int | None = None) -> tqdm:
    """A bar on stderr when stderr is a terminal; nothing at all in a pipe, a file or CI."""
    return tqdm(
        total=total,
        desc=desc,
        unit=f" {unit}",
        file=sys.stderr,
        disable=not sys.stderr.isatty(),
        leave=False,
    )


def _rows(counts: dict[str, int]) -> str:
    return ", ".join(f"{table.replace('_', ' ')} {n}" for table, n in counts.items() if n)


def import_summary(report: ImportReport) -> str:
    """What an import did, in plain words, in one line: the save it made (or replaced, with
    what it carried over), or 'already imported as … on …; nothing changed'."""
    if report.unchanged:
        when = f" on {report.imported_at:%Y-%m-%d %H:%M} UTC" if report.imported_at else ""
        return f"{report.source}: already imported as {report.save!r}{when}; nothing changed"
    head = f"{report.source}: world {', '.join(report.worlds)} ({report.era})"
    counts = {t: n for t, n in report.counts.items() if n}
    verb = "replaced save" if report.replaced else "new save"
    line = f"{head}: {verb} {report.save!r}, {sum(counts.values())} rows ({_rows(counts)})"
    if report.replaced:
        kept = ", ".join(f"{n} {kind}" for kind, n in report.kept.items() if n) or "nothing"
        dropped = ", ".join(f"{n} {kind}" for kind, n in report.dropped.items() if n)
        line += f"; kept from the old save: {kept}"
        line += f"; dropped (ids not in the new file): {dropped}" if dropped else ""
    return line


def add_save_arguments(parser) -> None:
    parser.add_argument(
        "--as",
        dest="as_name",
        metavar="NAME",
        help="the save's name (default: the file's name without its extension)",
    )
    parser.add_argument(
        "--replace",
        action="store_true",
        help="swap this file in for the save of that name, atomically, keeping the alias edits "
        "and accepted leak findings made here where the same ids exist",
    )


def command_line() -> str:
    """The command as typed, for the save's provenance."""
    return " ".join(["manage.py", *sys.argv[1:]]) if sys.argv[1:] else "manage.py"
