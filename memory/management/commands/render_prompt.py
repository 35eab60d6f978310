from __future__ import annotations

import json

from memory.engine.clock import world_time_at
from memory.engine.errors import InvalidInput, NotFound
from memory.engine.knowledge import get_viewer
from memory.engine.prompt import prompt_context
from memory.management.commands._base import OmniaCommand, refuse
from memory.selectors.pair import followed, history_note


class Command(OmniaCommand):
    save_scope = "one"
    save_hint = ("viewer_id",)
    help = "Print the prompt context a viewer's LLM call would receive, section by section."
    examples = ("npc-maren", "npc-maren --json", "npc-maren --at 2026-07-06T09:36:00.000Z")

    def add_arguments(self, parser) -> None:
        parser.add_argument("viewer_id", help="the NPC making the LLM call (an entity id)")
        parser.add_argument(
            "--json", action="store_true", help='{"sections": [{"name", "text"}], "text"}'
        )
        parser.add_argument(
            "--at",
            metavar="TIME",
            help="the context as it stood at this moment of the world's clock (an ISO time "
            "with a zone, like 2026-07-06T09:36:00.000Z): rows of then or before, the "
            "aliases of then",
        )

    def handle(self, *args, viewer_id: str, json: bool, at: str | None, **options) -> None:
        try:
            moment = world_time_at(at, "--at") if at is not None else None
            viewer = get_viewer(viewer_id)
        except (NotFound, InvalidInput) as exc:
            raise refuse(str(exc)) from None
        context = prompt_context(viewer, at=moment)
        note = history_note(followed()) if moment is not None else None
        if json:
            extra = {"at": moment, "aliases": note} if moment is not None else {}
            self.stdout.write(_dumps({**extra, **context.to_json()}))
        else:
            if note:  # beside the prompt, not in it: stdout stays what the call receives
                self.stderr.write(note)
            self.stdout.write(context.text)


def _dumps(value: object) -> str:
    # The option is called --json, which shadows the module inside handle().
    return json.dumps(value, ensure_ascii=False, indent=2)
