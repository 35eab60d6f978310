from __future__ import annotations

import sys

from django.core.management.base import BaseCommand
from tqdm import tqdm

from memory.management.commands._base import refuse
from memory.worlds.omnia_import import import_omnia
from memory.worlds.report import WorldImportError


class Command(BaseCommand):
    help = "Import an omnia SQLite world file (either era) into the inspector, atomically."

    def add_arguments(self, parser) -> None:
        parser.add_argument("path")

    def handle(self, *args, path: str, **options) -> None:
        bar = tqdm(
            unit=" rows", desc="buffer_entries", disable=not sys.stderr.isatty(), file=sys.stderr
        )
        try:
            report = import_omnia(path, progress=bar.update)
        except WorldImportError as exc:
            raise refuse(f"refused, nothing imported: {exc}") from None
        finally:
            bar.close()
        self.stdout.write(report.summary())
