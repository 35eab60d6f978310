"""The JSON twin of every inspector panel, and the write doors (editors; rebuild: admins).

Reads need a login session or an API token; writes need the editor role. Every 4xx has one
shape, `{"detail": str, "code": str, "field": str | null}` (schemas.ErrorOut, errors.py).
One router per area; `router` carries them all into omnia_site/api.py's NinjaAPI.
"""

from __future__ import annotations

from ninja import Router

from memory.web.api import buffer, entities, leaks, longterm, problems, projections
from memory.web.api.errors import install_error_handlers, status_of
from memory.web.auth import API_AUTH

__all__ = ["install_error_handlers", "router", "status_of"]

router = Router(auth=API_AUTH, tags=["memory"])
for area in (entities, buffer, projections, longterm, leaks, problems):
    router.add_router("", area.router)
