"""What every command shares: a one-line description with examples under --help, refused
input as one clear line on stderr and exit status 2, and a progress bar for long work that
shows on a terminal and stays out of pipes and logs."""

from __future__ import annotations

import argparse
import os
import sys
from datetime import datetime
from typing import Any

from django.core.management.base import BaseCommand, CommandError, DjangoHelpFormatter
from tqdm import tqdm

from memory.models import WorldSource
from memory.worlds.report import ImportReport


def refuse(message: str) -> CommandError:
    return CommandError(message, returncode=2)


class _HelpFormatter(DjangoHelpFormatter, argparse.RawDescriptionHelpFormatter):
    """Django's option order, with the examples kept line by line."""


class OmniaCommand(BaseCommand):
    """A command whose --help ends with worked examples (`examples`, one command a line)."""

    examples: tuple[str, ...] = ()

    def create_parser(self, prog_name: str, subcommand: str, **kwargs: Any):
        name = os.path.basename(prog_name)
        lines = [f"  {name} {subcommand} {example}".rstrip() for example in self.examples]
        kwargs.setdefault("epilog", "examples:\n" + "\n".join(lines) if lines else None)
        kwargs.setdefault("formatter_class", _HelpFormatter)
        return super().create_parser(prog_name, subcommand, **kwargs)


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


# Rewritten wholesale on every import of a world (not added): they say nothing about what
# a re-import changed.
_REWRITTEN = ("attributes", "attribute_acl")


def _rows(counts: dict[str, int]) -> str:
    return ", ".join(f"{table.replace('_', ' ')} {n}" for table, n in counts.items() if n)


def import_summary(report: ImportReport, started: datetime) -> str:
    """What an import changed, in plain words: 'added 71 rows (…)', or 'nothing changed:
    already imported on …' when the same file was imported before (its record untouched)."""
    head = f"{report.source}: world {', '.join(report.worlds)} ({report.era})"
    present = sum(report.skipped.values())
    added = {t: n for t, n in report.counts.items() if n and t not in _REWRITTEN}
    if added:
        counts = {t: n for t, n in report.counts.items() if n}
        line = f"{head}: added {sum(counts.values())} rows ({_rows(counts)})"
        return line + (f"; {present} rows were already here" if present else "")
    before = (
        WorldSource.objects.filter(world_id__in=report.worlds, imported_at__lt=started)
        .order_by("imported_at")
        .values_list("imported_at", flat=True)
        .first()
    )
    if before is not None:
        return f"{head}: nothing changed: already imported on {before:%Y-%m-%d %H:%M} UTC"
    return (
        f"{head}: no new rows, every row is already here ({present} rows); "
        "attributes re-read from this file"
    )
