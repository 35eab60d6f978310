from __future__ import annotations

import json

from memory.engine.buffer.rendered import iter_buffer, render_entry
from memory.engine.buffer.serializer import READINGS
from memory.engine.errors import NotFound
from memory.engine.knowledge import get_viewer
from memory.management.commands._base import OmniaCommand, refuse


class Command(OmniaCommand):
    save_scope = "one"
    save_hint = ("viewer_id",)
    help = "Print a viewer's buffer as that viewer reads it, one line per entry, oldest first."
    examples = (
        "npc-maren",
        "npc-maren --reading corrected",
        "npc-maren --format jsonl | head -3",
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("viewer_id", help="the NPC whose buffer to read (an entity id)")
        parser.add_argument(
            "--format",
            choices=["text", "jsonl"],
            default="text",
            help="text: the lines; jsonl: one JSON object per entry, undeliverable ones too",
        )
        parser.add_argument(
            "--reading",
            choices=READINGS,
            default="omnia",
            help="omnia: each line as omnia put it in the NPC's prompt, its bugs included "
            "(jsonl adds the flaws); corrected: with omnia's later-era bugs put right",
        )

    def handle(self, *args, viewer_id: str, format: str, reading: str, **options) -> None:
        try:
            viewer = get_viewer(viewer_id)
        except NotFound as exc:
            raise refuse(str(exc)) from None
        for entry in iter_buffer(viewer.id):
            rendered = render_entry(entry, viewer)
            line = rendered.reading(reading)
            if format == "jsonl":
                record: dict[str, object] = {"entry_id": rendered.id, "line": line}
                if rendered.undeliverable:
                    record["undeliverable"] = rendered.undeliverable
                if reading == "omnia" and rendered.flaws:
                    record["flaws"] = [flaw.to_dict() for flaw in rendered.flaws]
                self.stdout.write(json.dumps(record, ensure_ascii=False))
            elif line is not None:
                self.stdout.write(line)
            else:
                self.stderr.write(f"{rendered.id}: undeliverable: {rendered.undeliverable}")
