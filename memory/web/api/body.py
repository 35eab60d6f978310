"""A request body as every write door reads it: JSON, in UTF-8, parsed strictly.

django-ninja's own parser took any content type and let `json.loads` guess the encoding, so
a text/plain or UTF-16 body was read as JSON, and a key given twice kept its last value
silently (issue 29). Here the content type must be JSON (415 otherwise), its charset, if
given, UTF-8 (415), the bytes UTF-8 (400), and the text JSON by the engine's strict rules
(memory.engine.strict_json: no NaN/Infinity, no key twice, no huge integer; 400). The text
of each field (NUL, MAX_TEXT) is the schemas' to refuse, a 422 naming the field.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from ninja.parser import Parser

from memory.engine import strict_json
from memory.web.api.errors import ApiError

JSON_TYPES = ("application/json",)
UTF8 = ("utf-8", "utf8")


class StrictParser(Parser):
    def parse_body(self, request: HttpRequest) -> Any:
        kind = (request.content_type or "").lower()
        if kind not in JSON_TYPES and not (
            kind.startswith("application/") and kind.endswith("+json")
        ):
            shown = kind or "no content type"
            raise ApiError(
                415, f"send the body as application/json, not {shown}", "unsupported", "body"
            )
        charset = (request.content_params or {}).get("charset")
        if charset is not None and charset.strip().lower() not in UTF8:
            raise ApiError(
                415, f"send the body in UTF-8, not {charset[:40]}", "unsupported", "body"
            )
        try:
            text = request.body.decode("utf-8")
        except UnicodeDecodeError:
            raise ApiError(400, "body is not UTF-8 text", "bad_request", "body") from None
        # The JSON itself here; each field's text (NUL, length) is the schema's to refuse,
        # with the field named.
        try:
            return strict_json.parse(text)
        except RecursionError:
            detail = f"body: nested deeper than {strict_json.MAX_DEPTH} levels"
        except ValueError as exc:  # JsonRefused, JSONDecodeError
            detail = f"body is not JSON ({exc})"
        raise ApiError(400, detail, "bad_request", "body")
