"""GET /healthz: is the database answering, and how far behind are the projection workers.

No login (load balancers and uptime checks call it) and no writes; it reveals only ok /
degraded / error, counts and lag numbers — never an id (a watermark is an entry id, text from
the game) and never memory text. "degraded" (still 200: the service answers) when the fold
has quarantined rows it could not fold, or the shard count changed and no cycle has
re-partitioned yet. 200 when the database answers, 503 when it does not.
"""

from __future__ import annotations

import contextlib
import logging
import time

from django.db import DatabaseError, connection
from django.http import HttpRequest, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from memory.engine.projections.problems import problem_count
from memory.engine.projections.worker import projection_status
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
        status = projection_status()
        problems = problem_count()
        layout = stored_layout()
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
    degraded = problems > 0 or (layout not in (0, configured))
    return JsonResponse(
        {
            "status": "degraded" if degraded else "ok",
            "database": {
                "ok": True,
                "vendor": connection.vendor,
                "latency_ms": round((time.perf_counter() - started) * 1000, 2),
            },
            "projection_lag_rows": status["lag_rows"],
            "problems": problems,
            "shard_count": {"configured": configured, "stored": layout or configured},
            "shards": [
                {"shard": s["shard"], "rows_behind": s["rows_behind"]} for s in status["shards"]
            ],
        }
    )
