"""GET /healthz: is the database answering, and how far behind are the projection workers.

No login (load balancers and uptime checks call it) and no writes; it reveals only ok /
degraded / error, counts and lag numbers — never an id (a watermark is an entry id, text from
the game) and never memory text. "degraded" (still 200: the service answers) when the fold
has quarantined rows it could not fold or a save's projection cycle failed (both problems),
when any save's stored leak findings are stale (behind its rows although the fold has caught
up with every row: the cycle that rescans them ran and did not, so the leak pages answer from
old findings; while rows wait for the fold, findings behind are the cycle's work in hand, not
a fault), or the shard count changed and no cycle has re-partitioned yet. 200 when the database answers, 503 when it does not.
"""

from __future__ import annotations

import contextlib
import logging
import time

from django.db import DatabaseError, connection
from django.http import HttpRequest, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from memory.engine.leaks.standing import standing
from memory.engine.projections.problems import problem_count
from memory.engine.projections.worker import projection_status
from memory.engine.saves import each_save
from memory.engine.shards import shard_count, stored_layout

logger = logging.getLogger(__name__)


@never_cache
@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    started = time.perf_counter()
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
        # Every save's workers: the lag and problems summed, each shard merged across saves.
        per_save = [status for _save, status in each_save(_save_status)]
    except DatabaseError as exc:
        logger.warning("healthz: database unavailable: %s", exc)
        # Drop the broken connection so the next request opens a fresh one: recovery
        # without a restart once the database is back.
        with contextlib.suppress(DatabaseError):
            connection.close_if_unusable_or_obsolete()
        return JsonResponse(
            {
                "status": "error",
                "database": {"ok": False, "vendor": connection.vendor, "error": type(exc).__name__},
                "projection_lag_rows": None,
                "problems": None,
                "shards": [],
            },
            status=503,
        )
    configured = shard_count()
    problems = sum(s["problems"] for s in per_save)
    layouts = {s["layout"] for s in per_save} - {0}
    stale = sum(s["leak_viewers_stale"] for s in per_save)
    degraded = problems > 0 or stale > 0 or bool(layouts - {configured})
    layout = next(iter(layouts - {configured}), 0) if layouts - {configured} else configured
    return JsonResponse(
        {
            "status": "degraded" if degraded else "ok",
            "database": {
                "ok": True,
                "vendor": connection.vendor,
                "latency_ms": round((time.perf_counter() - started) * 1000, 2),
            },
            "projection_lag_rows": sum(s["lag_rows"] for s in per_save),
            "problems": problems,
            "leak_viewers_stale": stale,
            "saves": len(per_save),
            "shard_count": {"configured": configured, "stored": layout or configured},
            "shards": _merged_shards(per_save),
        }
    )


def _save_status(_save) -> dict:
    status = projection_status()
    return {
        "lag_rows": status["lag_rows"],
        "shards": status["shards"],
        "problems": problem_count(),
        "leak_viewers_stale": 0 if status["lag_rows"] else len(standing().behind),
        "layout": stored_layout(),
    }


def _merged_shards(per_save: list[dict]) -> list[dict]:
    """One line per shard over every save: counts summed, times the oldest (the laggard)."""
    merged: dict[object, dict] = {}
    for status in per_save:
        for shard in status["shards"]:
            shown = public_shard(shard)
            into = merged.setdefault(shown.get("shard"), dict(shown))
            if into is shown or into == shown:
                continue
            for key, value in shown.items():
                if key == "shard":
                    continue
                if isinstance(value, int) and not isinstance(value, bool):
                    into[key] = (into.get(key) or 0) + value
                elif isinstance(value, str) and (into.get(key) is None or value < into[key]):
                    into[key] = value
    return [merged[k] for k in sorted(merged, key=str)]


def public_shard(shard: dict) -> dict:
    """A shard's lag numbers and times, without its watermark (an entry id, text from the game)."""
    return {key: value for key, value in shard.items() if key != "watermark"}
