"""The one NinjaAPI instance; the memory router carries every operation."""

from __future__ import annotations

from ninja import NinjaAPI

from memory.web.api import install_error_handlers
from memory.web.api import router as memory_router

api = NinjaAPI(
    title="Omnia Memory Inspector API",
    version="1.0.0",
    description="Every inspector panel has a JSON twin here. Errors share one shape: "
    '{"detail": str, "code": str, "field": str | null}.',
    urls_namespace="api",
)
api.add_router("/", memory_router)
install_error_handlers(api)
