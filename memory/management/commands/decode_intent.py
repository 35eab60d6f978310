from __future__ import annotations

import json

from memory.engine.decoder import decode_intent
from memory.engine.errors import NotFound
from memory.engine.knowledge import get_viewer
from memory.management.commands._base import OmniaCommand, refuse


class Command(OmniaCommand):
    save_scope = "one"
    save_hint = ("actor_id",)
    help = "Resolve the labels in prose written by ACTOR_ID to system ids through its alias map."
    examples = ('npc-maren "I ask the hooded stranger about the lighthouse"',)

    def add_arguments(self, parser) -> None:
        parser.add_argument("actor_id", help="the NPC who wrote the prose (an entity id)")
        parser.add_argument("prose", help="the text, in the actor's own words")

    def handle(self, *args, actor_id: str, prose: str, **options) -> None:
        try:
            actor = get_viewer(actor_id)
        except NotFound as exc:
            raise refuse(str(exc)) from None
        resolution = decode_intent(prose, actor.id, actor.aliases)
        self.stdout.write(json.dumps(resolution.to_dict(), ensure_ascii=False, indent=2))
