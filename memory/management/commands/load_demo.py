from __future__ import annotations

from memory.engine import audit
from memory.engine.errors import Conflict
from memory.management.commands._base import (
    OmniaCommand,
    command_line,
    import_summary,
    refuse,
)
from memory.models import Save
from memory.worlds.demo import DEMO_SAVE, load_demo
from memory.worlds.report import WorldImportError


class Command(OmniaCommand):
    help = f"Load the bundled demo world (memory/demo/demo_world.json) as the save {DEMO_SAVE!r}."
    examples = ("", "--if-empty")

    def add_arguments(self, parser) -> None:
        parser.add_argument(
            "--if-empty", action="store_true", help="do nothing if any save is loaded already"
        )

    def handle(self, *args, if_empty: bool, **options) -> None:
        if if_empty and Save.objects.live().exists():
            names = ", ".join(Save.objects.live().order_by("name").values_list("name", flat=True))
            self.stdout.write(f"nothing changed: saves are loaded already ({names})")
            return
        actor = audit.cli_actor()
        try:
            report = load_demo(command=command_line(), actor=actor)
        except (WorldImportError, Conflict) as exc:
            raise refuse(f"refused, nothing loaded: {exc}") from None
        self.stdout.write(import_summary(report))
        audit.record_import("world.load", report, actor)
