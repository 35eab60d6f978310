"""Opaque keyset cursors: a short JSON list, URL-safe base64 without padding.

Every paged read (the buffer, sessions, episodes) hands these out and takes them back; a
cursor that is not one of ours is invalid input, never a crash.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

from memory.engine.errors import InvalidInput

NOT_OURS = "cursor is not one this inspector handed out"


class BadCursor(InvalidInput):
    """A cursor this store did not hand out (or one for another kind of page)."""

    def __init__(self, message: str = NOT_OURS, *, field: str | None = "cursor") -> None:
        super().__init__(message, field=field)


# The integers a cursor holds are column values: none lies outside a 64-bit integer (SQLite
# refuses to bind one, with an OverflowError rather than an answer).
_INT64 = -(2**63)


def encode_cursor(values: list[Any]) -> str:
    raw = json.dumps(values, separators=(",", ":")).encode("utf-8")
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def decode_cursor(
    cursor: str, shape: tuple[type, ...], *, field: str | None = "cursor", message: str = NOT_OURS
) -> list[Any]:
    """The values of a cursor, checked against `shape` (one type per position)."""
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        value = json.loads(base64.urlsafe_b64decode(padded.encode("ascii")))
    except (ValueError, binascii.Error, UnicodeError):
        raise BadCursor(message, field=field) from None
    if (
        not isinstance(value, list)
        or len(value) != len(shape)
        or not all(
            isinstance(v, t)
            and not (t is int and (isinstance(v, bool) or not _INT64 <= v < -_INT64))
            for v, t in zip(value, shape, strict=True)
        )
    ):
        raise BadCursor(message, field=field)
    return value
