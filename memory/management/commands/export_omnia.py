from __future__ import annotations

from memory.management.commands._base import OmniaCommand, progress_bar, refuse
from memory.models import ObjectType, WorldObject
from memory.worlds.export import ERAS, ExportError, UnknownWorld, export_omnia


class Command(OmniaCommand):
    save_scope = "one"
    save_hint = ("world",)
    help = "Write a world back as an omnia SQLite file (the era it came from, or --era)."
    examples = (
        "var/world.sqlite",
        "var/world.sqlite --world harbor-town --era v2",
        "var/world.sqlite --force",
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("path", help="the SQLite file to write (a new file, mode 0644)")
        parser.add_argument(
            "--force",
            action="store_true",
            help="replace an existing file, atomically, keeping its mode (never the store's "
            "own database or a file in use)",
        )
        parser.add_argument("--world", help="world id (default: the only world)")
        parser.add_argument("--era", choices=ERAS, help="omnia's file format (default: as read)")

    def handle(
        self, *args, path: str, world: str | None, era: str | None, force: bool, **options
    ) -> None:
        if world is None:
            worlds = list(
                WorldObject.objects.filter(type=ObjectType.WORLD).values_list("id", flat=True)
            )
            if len(worlds) != 1:
                raise refuse(
                    f"name the world with --world (worlds here: {', '.join(worlds) or 'none'})"
                )
            world = worlds[0]
        with progress_bar("export", "buffer rows") as bar:
            try:
                counts = export_omnia(world, path, era=era, progress=bar.update, force=force)
            except (ExportError, UnknownWorld, OSError) as exc:
                raise refuse(f"export refused: {exc}") from None
        self.stdout.write(
            f"wrote {path}: "
            + ", ".join(f"{table.replace('_', ' ')} {n}" for table, n in counts.items())
        )
