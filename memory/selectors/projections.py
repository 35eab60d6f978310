"""Projections as the pages show them: a viewer's sessions panel, the workers' status."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from memory.active_save import among, scoped_rows
from memory.engine.aliases import resolve_alias, shown_label
from memory.engine.buffer.rendered import intent_facts
from memory.engine.clock import time_key
from memory.engine.knowledge import Viewer, get_viewer
from memory.engine.newest import chunks
from memory.engine.projections.doors import (
    Digest,
    Page,
    digest,
    digest_of_sessions,
    session_places,
)
from memory.engine.projections.doors import episodes as door_episodes
from memory.engine.projections.doors import sessions as door_sessions
from memory.engine.projections.summaries import summaries_for
from memory.engine.projections.worker import projection_status as engine_projection_status
from memory.models import BufferEntry, MemorySession


@dataclass
class SessionsPanel:
    sessions: Page
    digest: Digest
    episodes: Page
    summaries: dict[str, tuple[str | None, bool]]  # session key -> (summary, stale)
    places: dict[str, str]  # session key -> where it happened, as the viewer calls the place
    people: dict[str, list[str]]  # session key -> who took part, as the viewer calls them

    # The doors answer newest first (what an API pager wants); the page reads oldest first,
    # like the buffer and the timeline beside them.
    @property
    def sessions_oldest_first(self) -> list:
        return sorted(self.sessions.items, key=lambda s: (time_key(s.last_at), s.session_key))

    @property
    def episodes_oldest_first(self) -> list:
        return sorted(self.episodes.items, key=lambda e: e.ordinal)

    def episode_at(self, timestamp: str) -> int | None:
        """The ordinal of the shown episode whose span holds this world time, if any."""
        at = time_key(timestamp)
        for e in self.episodes.items:
            if time_key(e.first_at) <= at <= time_key(e.last_at):
                return e.ordinal
        return None


def sessions_panel(viewer: str | Viewer, *, limit: int = 20) -> SessionsPanel:
    """Sessions, digest, episodes and the shown sessions' summaries of one viewer (by id, or
    read already: the doors then take it as it is)."""
    viewer_id = viewer if isinstance(viewer, str) else viewer.id
    sessions = door_sessions(viewer, limit=limit)
    # The door's items carry what summaries_for reads of a session (owner, key, content
    # hash): unsaved rows made of them spare reading the same sessions again.
    rows = [
        MemorySession(owner_id=viewer_id, session_key=s.session_key, content_hash=s.content_hash)
        for s in sessions.items
    ]
    summaries = {key: answer for (_owner, key), answer in summaries_for(rows).items()}
    places = session_places(viewer_id, sessions.items)
    return SessionsPanel(
        sessions=sessions,
        # The digest's sessions are the newest of the page's, their places read with them.
        digest=digest_of_sessions(sessions, places) or digest(viewer),
        episodes=door_episodes(viewer, limit=limit),
        summaries=summaries,
        places=places,
        people=session_people(viewer, sessions.items),
    )


def session_people(viewer: str | Viewer, sessions: Sequence[Any]) -> dict[str, list[str]]:
    """Who took part in each of these sessions, as the viewer calls them ("the bartender"),
    the viewer itself left out: the actor and targets of its latest moment. The session row
    keeps no list of people, and reading every row of a long scene on each page would cost
    more than the whole panel; the latest moment is one row a session, one query in all."""
    viewer = get_viewer(viewer) if isinstance(viewer, str) else viewer
    key_of = {s.last_member_id: s.session_key for s in sessions}
    people: dict[str, list[str]] = {key: [] for key in key_of.values()}
    for chunk in chunks(list(key_of), 500):
        latest, params = among("id", chunk)
        rows = scoped_rows(
            f"SELECT id, intent_json FROM {BufferEntry._meta.db_table} "
            f"WHERE game_save_id = %(save)s AND {latest} AND owner_id = %s",
            [*params, viewer.id],
        )
        for entry_id, intent_json in rows:
            _type, actor, targets = intent_facts(intent_json)
            ids = dict.fromkeys(i for i in (actor, *targets) if i and i != viewer.id)
            people[key_of[entry_id]] = [shown_label(resolve_alias(viewer, i)) for i in ids]
    return people


def projection_status() -> dict:
    """The workers' status; each watermark also as the wall time it stands at (its
    `created_at` is write order in microseconds, which no person reads)."""
    status = engine_projection_status()
    for shard in status["shards"]:
        micros = shard["watermark"]["created_at"]
        shard["watermark_at"] = (
            datetime.fromtimestamp(micros / 1_000_000, tz=UTC).isoformat(timespec="microseconds")
            if micros
            else None
        )
    return status
