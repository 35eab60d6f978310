"""Whether a followed save is live, and the version the pages poll (one small query over
every save's follow: a page learns that something it may show moved)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db.models import Count, Max, Sum
from django.utils import timezone

from memory.engine.clock import wall_iso
from memory.models import LiveFollow

# A follower beats at least every 2 s while it runs; missing a few beats is "not live".
LIVE_WITHIN = timedelta(seconds=10)


@dataclass(frozen=True)
class LiveStatus:
    follows: int  # saves ever followed into this database
    live: bool  # a follower is running now
    version: str  # moves whenever a follower applied a batch (and its follow-up)
    updated_at: str | None  # when the last batch landed (ISO, UTC)
    heartbeat_at: str | None
    age_s: float | None  # seconds since then, by the server's clock (the browser's may differ)

    def as_dict(self) -> dict[str, object]:
        return {
            "follows": self.follows,
            "live": self.live,
            "version": self.version,
            "updated_at": self.updated_at,
            "heartbeat_at": self.heartbeat_at,
            "age_s": self.age_s,
        }


def _iso(moment: datetime | None) -> str | None:
    return wall_iso(moment) if moment is not None else None


def live_status(save_name: str | None = None) -> LiveStatus:
    """Over every save, or over one save's follow (a page of that save: its marker is about
    that save alone, and a save nobody follows has none)."""
    follows = LiveFollow.every_save.all()
    if save_name is not None:
        follows = follows.filter(game_save__name=save_name)
    found = follows.aggregate(
        n=Count("pk"), version=Sum("version"), applied=Max("applied_at"), beat=Max("heartbeat_at")
    )
    beat, applied, now = found["beat"], found["applied"], timezone.now()
    return LiveStatus(
        follows=found["n"] or 0,
        live=beat is not None and now - beat <= LIVE_WITHIN,
        version=f"{found['n'] or 0}.{found['version'] or 0}",
        updated_at=_iso(applied),
        heartbeat_at=_iso(beat),
        age_s=round((now - applied).total_seconds(), 1) if applied is not None else None,
    )
