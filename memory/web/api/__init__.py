"""The JSON twin of every inspector panel, and the write doors (editors; rebuild: admins).

Reads need a login session or an API token; writes need the editor role. Every 4xx has one
shape, `{"detail": str, "code": str, "field": str | null}` (schemas.ErrorOut, errors.py).
One router per area; `router` carries them all into omnia_site/api.py's NinjaAPI: the saves
at `/saves`, and everything one save holds below `/saves/{save}/`, run inside that save
(memory/web/saves.py).
"""

from __future__ import annotations

from memory.web.api.errors import install_error_handlers, status_of
from memory.web.api.routes import router

__all__ = ["install_error_handlers", "router", "status_of"]
