from __future__ import annotations

from memory.engine import audit
from memory.engine.errors import Conflict, InvalidInput
from memory.management.commands._base import (
    OmniaCommand,
    add_save_arguments,
    command_line,
    import_summary,
    progress_bar,
    refuse,
)
from memory.worlds.scenario import load_world


class Command(OmniaCommand):
    help = (
        "Load an omnia scenario JSON (plus layers, memories, abstractions) into a save, atomically."
    )
    examples = (
        "path/to/scenario.json",
        "path/to/scenario.json --as talking-room-2",
        "path/to/scenario.json --as talking-room --replace",
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("path", help="an omnia scenario JSON file")
        add_save_arguments(parser)

    def handle(self, *args, path: str, as_name: str | None, replace: bool, **options) -> None:
        actor = audit.cli_actor()
        with progress_bar("load", "rows") as bar:
            try:
                report = load_world(
                    path,
                    as_name=as_name,
                    replace=replace,
                    progress=bar.update,
                    command=command_line(),
                    actor=actor,
                )
            except (InvalidInput, Conflict) as exc:
                raise refuse(f"refused, nothing loaded: {exc}") from None
        self.stdout.write(import_summary(report))
        audit.record_import("world.load", report, actor)
