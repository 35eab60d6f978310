"""manage.py faces VIEWER_ID [--include-shadowed] [--json]: one viewer's long-term faces."""

from __future__ import annotations

import json

from memory.engine.errors import NotFound
from memory.engine.longterm.reader import FacesAnswer, viewer_faces
from memory.management.commands._base import OmniaCommand, refuse


def faces_json(answer: FacesAnswer) -> dict:
    """The issue's shape, exactly: ids only, so a script can diff two runs."""
    return {
        "default": [item.id for item in answer.default],
        "shadowed": answer.shadowed,
        "superseded": answer.superseded,
        "rows_visited": answer.rows_visited,
        "name_warnings": [w.as_dict() for w in answer.name_warnings],
    }


class Command(OmniaCommand):
    save_scope = "one"
    save_hint = ("viewer_id",)
    help = "Print a viewer's long-term memory faces: default face, shadowed, superseded."
    examples = ("npc-maren", "npc-maren --include-shadowed --json")

    def add_arguments(self, parser) -> None:
        parser.add_argument("viewer_id", help="the NPC whose long-term memory to read")
        parser.add_argument(
            "--include-shadowed", action="store_true", help="list shadowed and superseded too"
        )
        parser.add_argument("--json", action="store_true", help="machine-readable output")

    def handle(self, *args, viewer_id: str, include_shadowed: bool, json: bool, **options) -> None:
        try:
            answer = viewer_faces(viewer_id, include_shadowed=include_shadowed)
        except NotFound as exc:
            raise refuse(str(exc)) from None
        if json:
            self.stdout.write(_dumps(faces_json(answer)))
            return
        face = "every deliverable entry" if include_shadowed else "default face"
        self.stdout.write(f"{answer.viewer_id}: {face}, {len(answer.items)} entries")
        for item in answer.items:
            tags = f" {' '.join(item.tags)}" if item.tags else ""
            self.stdout.write(f"  {item.id}  [{item.scope}] {item.title}{tags}")
            for note in item.notes:
                self.stdout.write(f"      {note}")
        for entry_id in answer.withheld:
            self.stdout.write(f"  withheld: {entry_id}")
        for entry_id, reason in answer.undeliverable.items():
            self.stdout.write(f"  undeliverable: {entry_id}: {reason}")
        for warning in answer.name_warnings:
            self.stdout.write(f"  warning: {warning.text}")
        self.stdout.write(f"rows visited: {answer.rows_visited}")


def _dumps(data: dict) -> str:
    # The option is called --json, which shadows the module inside handle().
    return json.dumps(data, ensure_ascii=False)
