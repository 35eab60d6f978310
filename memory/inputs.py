"""The one place the web (API operations and pages) checks input text before it reaches the
database or the engine: NUL, and the one length limit of every text field (MAX_TEXT).

PostgreSQL refuses NUL in text (psycopg raises a DataError), so NUL is refused here: in an id
of the path it names nothing (404, as any unknown id), in any other text it is invalid input
(the API's 422 with the field named; a page's 400).
"""

from __future__ import annotations

from typing import Any

from ninja import Schema

from memory.engine.errors import InvalidInput, NotFound
from memory.engine.strict_json import MAX_TEXT

NUL = "\x00"
MAX_LIMIT = 500
# Past any world this inspector holds, and inside what SQLite binds as an integer.
MAX_OFFSET = 10**9


def path_id(value: str, field: str) -> str:
    """An id from the URL path (or a slug naming one entry)."""
    if NUL in value:
        raise NotFound(f"no {field} with that id", field=field)
    return value


def whole_number(value: str, digits: int) -> int | None:
    """`value` as a whole number when it is written in at most `digits` ASCII digits, else
    None. Not str.isdigit alone: it also says yes to "²" and other digits int() refuses (a
    page offset of "²" answered 500)."""
    if value.isascii() and value.isdigit() and len(value) <= digits:
        return int(value)
    return None


def text(value: str | None, field: str) -> str | None:
    """A text query parameter or payload field."""
    if value is not None and NUL in value:
        raise InvalidInput(f"{field} must not contain NUL characters", field=field)
    if value is not None and len(value) > MAX_TEXT:
        raise InvalidInput(
            f"{field} is {len(value):,} characters long; the limit is {MAX_TEXT:,}", field=field
        )
    return value


def payload(data: Schema) -> Schema:
    """Every text field of a payload, and every text in its lists. Objects (an intent) are
    stored as JSON, whose escapes carry a NUL safely."""
    for name, value in data:
        values: list[Any] = value if isinstance(value, list) else [value]
        for item in values:
            if isinstance(item, str):
                text(item, name)
    return data


def limit(value: int) -> int:
    if not 1 <= value <= MAX_LIMIT:
        raise InvalidInput(f"limit must be between 1 and {MAX_LIMIT}", field="limit")
    return value


def offset(value: int) -> int:
    if not 0 <= value <= MAX_OFFSET:
        raise InvalidInput(f"offset must be between 0 and {MAX_OFFSET}", field="offset")
    return value
