"""manage.py delete_save NAME: remove a save and every row under it, audited."""

from __future__ import annotations

import sys
from typing import Any

from memory.engine import audit
from memory.engine.errors import NotFound
from memory.engine.saves import delete_save, get_save
from memory.management.commands._base import OmniaCommand, refuse


class Command(OmniaCommand):
    help = "Delete a save and everything under it (its world, memories, projections, edits)."
    examples = ("tavern-1", "tavern-1 --yes")

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("name", help="the save to delete")
        parser.add_argument(
            "--yes", action="store_true", help="do not ask; needed when stdin is not a terminal"
        )

    def handle(self, *args: Any, name: str, yes: bool, **options: Any) -> None:
        try:
            save = get_save(name)
        except NotFound as exc:
            raise refuse(str(exc)) from None
        if not yes:
            if not sys.stdin.isatty():
                raise refuse(
                    f"refusing to delete save {name!r} without --yes (stdin is no terminal)"
                )
            answer = input(
                f"Delete save {name!r} ({save.source_name or save.kind}) and every row under "
                "it? Type its name to confirm: "
            )
            if answer.strip() != name:
                raise refuse("not confirmed; nothing deleted")
        deleted = delete_save(name, actor=audit.cli_actor())
        self.stdout.write(f"deleted save {name!r}: {deleted.total} rows")
