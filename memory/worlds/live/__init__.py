"""Way in, live: follow an omnia save file while a game writes it (`manage.py follow_omnia`).

One job per module: `source` reads the game's file (no Django), `checks` holds what it read
to the import's rules, `apply` writes our rows (never the file), `follower` is the loop that
ties them; `changes` is the plain data passed between them.
"""

from __future__ import annotations

from memory.worlds.live.apply import SaveGone
from memory.worlds.live.changes import BatchResult, Replaced
from memory.worlds.live.follower import Follower, FollowRefused, follow, waiting_for
from memory.worlds.live.verify import verify

__all__ = [
    "BatchResult",
    "FollowRefused",
    "Follower",
    "Replaced",
    "SaveGone",
    "follow",
    "verify",
    "waiting_for",
]
