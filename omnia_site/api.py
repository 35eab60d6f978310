"""The one NinjaAPI instance; the memory router carries every operation."""

from __future__ import annotations

from ninja import NinjaAPI
from ninja.operation import Operation

from memory.web.api import install_error_handlers
from memory.web.api import router as memory_router
from memory.web.api.body import StrictParser
from memory.web.api.compare import router as compare_router
from memory.web.auth import docs_login_required


class InspectorAPI(NinjaAPI):
    def get_openapi_operation_id(self, operation: Operation) -> str:
        # The operations once lived in one module, memory.web.api; their ids keep its name so
        # a generated client keeps its method names whichever router module holds them now.
        return f"memory_web_api_{operation.view_func.__name__}"


api = InspectorAPI(
    title="Omnia Memory Inspector API",
    version="1.0.0",
    description="Every inspector panel has a JSON twin here. Errors share one shape: "
    '{"detail": str, "code": str, "field": str | null}.',
    urls_namespace="api",
    docs_decorator=docs_login_required,
    parser=StrictParser(),
)
api.add_router("/", memory_router)
api.add_router("/", compare_router)
install_error_handlers(api)
