"""What every schema shares: a request body's strictness, and the one error shape."""

from __future__ import annotations

from typing import Any

from ninja import Schema
from pydantic import BaseModel, ConfigDict, field_validator

from memory.engine.strict_json import text_problem


class _In(Schema):
    """A request body: JSON types as they are, never coerced (`"5"` is not 5, `true` is not 1,
    an object is not a string), and no text a backend cannot store (NUL, a lone surrogate).
    Objects inside (an intent) are checked by the engine's door."""

    model_config = ConfigDict(strict=True)

    @field_validator("*", mode="after")
    @classmethod
    def _storable_text(cls, value: Any) -> Any:
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, str) and (problem := text_problem(item)):
                raise ValueError(problem)
        return value


class DictOut(BaseModel):
    """An answer made of the dicts a selector returns, validated by pydantic's core alone.
    ninja's Schema reads every field through a Python getter made for ORM objects (and its
    resolvers): the leak report's 20,155 findings spent 2.5 s of a 4 s answer there. An
    answer read off model instances, or with a resolve_ method, stays a Schema."""

    model_config = ConfigDict(from_attributes=True)


class ErrorOut(Schema):
    """The one error shape of every 4xx: what went wrong, a stable code, and the field to blame."""

    detail: str
    code: str
    field: str | None = None
