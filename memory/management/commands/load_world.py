from __future__ import annotations

from django.core.management.base import BaseCommand

from memory.engine import audit
from memory.management.commands._base import refuse
from memory.worlds.report import WorldImportError
from memory.worlds.scenario import load_world


class Command(BaseCommand):
    help = "Load an omnia scenario JSON (plus optional layers, memories, abstractions), atomically."

    def add_arguments(self, parser) -> None:
        parser.add_argument("path")

    def handle(self, *args, path: str, **options) -> None:
        digest = audit.restated_digest()
        try:
            report = load_world(path)
        except WorldImportError as exc:
            raise refuse(f"refused, nothing loaded: {exc}") from None
        self.stdout.write(report.summary())
        audit.record_import("world.load", report, audit.cli_actor(), digest_before=digest)
