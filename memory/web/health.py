"""GET /healthz: is the database answering, and how far behind are the projection workers.

No login (load balancers and uptime checks call it) and no writes; it reveals only counts
and times, never an id or memory text (a shard's watermark is an entry id from the game, so
it is left out). 200 when the database answers, 503 when it does not.
"""

from __future__ import annotations

import contextlib
import logging
import time

from django.db import DatabaseError, connection
from django.http import HttpRequest, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from memory.engine.projections.worker import projection_status

logger = logging.getLogger(__name__)


@never_cache
@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    started = time.perf_counter()
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
        status = projection_status()
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
                "shards": [],
            },
            status=503,
        )
    return JsonResponse(
        {
            "status": "ok",
            "database": {
                "ok": True,
                "vendor": connection.vendor,
                "latency_ms": round((time.perf_counter() - started) * 1000, 2),
            },
            "projection_lag_rows": status["lag_rows"],
            "shards": [public_shard(shard) for shard in status["shards"]],
        }
    )


def public_shard(shard: dict) -> dict:
    """A shard's lag numbers, without its watermark (an entry id, text from the game)."""
    return {key: value for key, value in shard.items() if key != "watermark"}
