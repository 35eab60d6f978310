"""Projections as the pages show them: a viewer's sessions panel, the workers' status."""

from __future__ import annotations

from dataclasses import dataclass

from memory.engine.projections.doors import Digest, Page, digest
from memory.engine.projections.doors import episodes as door_episodes
from memory.engine.projections.doors import sessions as door_sessions
from memory.engine.projections.summaries import summaries_for
from memory.engine.projections.worker import projection_status as engine_projection_status
from memory.models import MemorySession


@dataclass
class SessionsPanel:
    sessions: Page
    digest: Digest
    episodes: Page
    summaries: dict[str, tuple[str | None, bool]]  # session key -> (summary, stale)


def sessions_panel(viewer_id: str, *, limit: int = 20) -> SessionsPanel:
    """Sessions, digest, episodes and the shown sessions' summaries of one viewer."""
    sessions = door_sessions(viewer_id, limit=limit)
    rows = MemorySession.objects.filter(
        owner_id=viewer_id, session_key__in=[s.session_key for s in sessions.items]
    )
    summaries = {key: answer for (_owner, key), answer in summaries_for(list(rows)).items()}
    return SessionsPanel(
        sessions=sessions,
        digest=digest(viewer_id),
        episodes=door_episodes(viewer_id, limit=limit),
        summaries=summaries,
    )


def projection_status() -> dict:
    return engine_projection_status()
