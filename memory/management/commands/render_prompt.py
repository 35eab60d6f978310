from __future__ import annotations

import json

from memory.engine.errors import NotFound
from memory.engine.knowledge import get_viewer
from memory.engine.prompt import prompt_context
from memory.management.commands._base import OmniaCommand, refuse


class Command(OmniaCommand):
    save_scope = "one"
    save_hint = ("viewer_id",)
    help = "Print the prompt context a viewer's LLM call would receive, section by section."
    examples = ("npc-maren", "npc-maren --json")

    def add_arguments(self, parser) -> None:
        parser.add_argument("viewer_id", help="the NPC making the LLM call (an entity id)")
        parser.add_argument(
            "--json", action="store_true", help='{"sections": [{"name", "text"}], "text"}'
        )

    def handle(self, *args, viewer_id: str, json: bool, **options) -> None:
        try:
            viewer = get_viewer(viewer_id)
        except NotFound as exc:
            raise refuse(str(exc)) from None
        context = prompt_context(viewer)
        if json:
            self.stdout.write(_dumps(context.to_json()))
        else:
            self.stdout.write(context.text)


def _dumps(value: object) -> str:
    # The option is called --json, which shadows the module inside handle().
    return json.dumps(value, ensure_ascii=False, indent=2)
