from __future__ import annotations

from django.utils import timezone

from memory.management.commands._base import (
    OmniaCommand,
    import_summary,
    progress_bar,
    refuse,
)
from memory.worlds.report import WorldImportError
from memory.worlds.scenario import load_world


class Command(OmniaCommand):
    help = "Load an omnia scenario JSON (plus optional layers, memories, abstractions), atomically."
    examples = ("path/to/scenario.json", "memory/demo/demo_world.json")

    def add_arguments(self, parser) -> None:
        parser.add_argument("path", help="an omnia scenario JSON file")

    def handle(self, *args, path: str, **options) -> None:
        started = timezone.now()
        with progress_bar("load", "rows") as bar:
            try:
                report = load_world(path, progress=bar.update)
            except WorldImportError as exc:
                raise refuse(f"refused, nothing loaded: {exc}") from None
        self.stdout.write(import_summary(report, started))
