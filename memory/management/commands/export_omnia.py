from __future__ import annotations

from django.core.management.base import BaseCommand

from memory.management.commands._base import refuse
from memory.models import ObjectType, WorldObject
from memory.worlds.export import ERAS, ExportError, UnknownWorld, export_omnia


class Command(BaseCommand):
    help = "Write a world back as an omnia SQLite file (the era it came from, or --era)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("path")
        parser.add_argument("--world", help="world id (default: the only world)")
        parser.add_argument("--era", choices=ERAS)

    def handle(self, *args, path: str, world: str | None, era: str | None, **options) -> None:
        if world is None:
            worlds = list(
                WorldObject.objects.filter(type=ObjectType.WORLD).values_list("id", flat=True)
            )
            if len(worlds) != 1:
                raise refuse(
                    f"name the world with --world (worlds here: {', '.join(worlds) or 'none'})"
                )
            world = worlds[0]
        try:
            counts = export_omnia(world, path, era=era)
        except (ExportError, UnknownWorld, OSError) as exc:
            raise refuse(f"export refused: {exc}") from None
        self.stdout.write(f"{path}: " + ", ".join(f"{table} {n}" for table, n in counts.items()))
