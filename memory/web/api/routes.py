"""The API's routers put together: the saves at `/saves`, and everything one save holds below
`/saves/{save}/`, run inside that save (memory/web/saves.py)."""

from __future__ import annotations

from ninja import Router

from memory.web import converters  # noqa: F401  (registers the "oid" path converter first)
from memory.web.api import (
    buffer,
    entities,
    events,
    leaks,
    longterm,
    problems,
    projections,
    saves,
    triage,
)
from memory.web.auth import API_AUTH
from memory.web.saves import in_save_operation, in_save_run

router = Router(auth=API_AUTH, tags=["memory"])
router.add_router("", saves.router)
# Over every save: the leak triage queue (each finding names its save).
router.add_router("", triage.router)

in_one_save = Router()
in_one_save.add_decorator(in_save_run, mode="view")
in_one_save.add_decorator(in_save_operation, mode="operation")
for area in (entities, buffer, events, projections, longterm, leaks, problems):
    in_one_save.add_router("", area.router)
router.add_router("/saves/{save}", in_one_save)
