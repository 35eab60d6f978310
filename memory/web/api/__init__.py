"""The JSON twin of every inspector panel, and the write doors (editors; rebuild: admins).

Reads need a login session or an API token; writes need the editor role. Every 4xx has one
shape, `{"detail": str, "code": str, "field": str | null}` (schemas.ErrorOut, errors.py).
One router per area; `router` carries them all into omnia_site/api.py's NinjaAPI: the saves
at `/saves`, and everything one save holds below `/saves/{save}/`, run inside that save
(memory/web/saves.py).
"""

from __future__ import annotations

from ninja import Router

from memory.web import converters  # noqa: F401  (registers the "oid" path converter first)
from memory.web.api import buffer, entities, leaks, longterm, problems, projections, saves
from memory.web.api.errors import install_error_handlers, status_of
from memory.web.auth import API_AUTH
from memory.web.saves import in_save_operation, in_save_run

__all__ = ["install_error_handlers", "router", "status_of"]

router = Router(auth=API_AUTH, tags=["memory"])
router.add_router("", saves.router)

in_one_save = Router()
in_one_save.add_decorator(in_save_run, mode="view")
in_one_save.add_decorator(in_save_operation, mode="operation")
for area in (entities, buffer, projections, longterm, leaks, problems):
    in_one_save.add_router("", area.router)
router.add_router("/saves/{save}", in_one_save)
