from __future__ import annotations

import json

from memory.engine.buffer.rendered import iter_buffer, render_entry
from memory.engine.errors import NotFound
from memory.engine.knowledge import get_viewer
from memory.management.commands._base import OmniaCommand, refuse


class Command(OmniaCommand):
    save_scope = "one"
    save_hint = ("viewer_id",)
    help = "Print a viewer's buffer as that viewer reads it, one line per entry, oldest first."
    examples = ("npc-maren", "npc-maren --format jsonl | head -3")

    def add_arguments(self, parser) -> None:
        parser.add_argument("viewer_id", help="the NPC whose buffer to read (an entity id)")
        parser.add_argument(
            "--format",
            choices=["text", "jsonl"],
            default="text",
            help="text: the lines; jsonl: one JSON object per entry, undeliverable ones too",
        )

    def handle(self, *args, viewer_id: str, format: str, **options) -> None:
        try:
            viewer = get_viewer(viewer_id)
        except NotFound as exc:
            raise refuse(str(exc)) from None
        for entry in iter_buffer(viewer.id):
            rendered = render_entry(entry, viewer)
            if format == "jsonl":
                record = {"entry_id": rendered.id, "line": rendered.line}
                if rendered.undeliverable:
                    record["undeliverable"] = rendered.undeliverable
                self.stdout.write(json.dumps(record, ensure_ascii=False))
            elif rendered.line is not None:
                self.stdout.write(rendered.line)
            else:
                self.stderr.write(f"{rendered.id}: undeliverable: {rendered.undeliverable}")
