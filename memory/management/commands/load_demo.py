from __future__ import annotations

from django.utils import timezone

from memory.management.commands._base import OmniaCommand, import_summary, refuse
from memory.models import WorldSource
from memory.worlds.demo import load_demo
from memory.worlds.report import WorldImportError


class Command(OmniaCommand):
    help = "Load the bundled demo world (memory/demo/demo_world.json)."
    examples = ("", "--if-empty")

    def add_arguments(self, parser) -> None:
        parser.add_argument(
            "--if-empty", action="store_true", help="do nothing if the demo is already loaded"
        )

    def handle(self, *args, if_empty: bool, **options) -> None:
        loaded = WorldSource.objects.filter(kind="scenario", source_path="demo_world.json").first()
        if if_empty and loaded is not None:
            self.stdout.write(
                "nothing changed: the demo world is already loaded "
                f"(since {loaded.imported_at:%Y-%m-%d %H:%M} UTC)"
            )
            return
        started = timezone.now()
        try:
            report = load_demo()
        except WorldImportError as exc:
            raise refuse(f"refused, nothing loaded: {exc}") from None
        self.stdout.write(import_summary(report, started))
