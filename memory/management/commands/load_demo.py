from __future__ import annotations

from django.core.management.base import BaseCommand

from memory.engine import audit
from memory.management.commands._base import refuse
from memory.models import WorldSource
from memory.worlds.demo import load_demo
from memory.worlds.report import WorldImportError


class Command(BaseCommand):
    help = "Load the bundled demo world."

    def add_arguments(self, parser) -> None:
        parser.add_argument(
            "--if-empty", action="store_true", help="do nothing if a demo is loaded"
        )

    def handle(self, *args, if_empty: bool, **options) -> None:
        if (
            if_empty
            and WorldSource.objects.filter(kind="scenario", source_path="demo_world.json").exists()
        ):
            self.stdout.write("demo world already loaded")
            return
        digest = audit.restated_digest()
        try:
            report = load_demo()
        except WorldImportError as exc:
            raise refuse(f"refused, nothing loaded: {exc}") from None
        self.stdout.write(report.summary())
        audit.record_import("world.load", report, audit.cli_actor(), digest_before=digest)
