"""Intent and outcome schemas for both omnia eras, checked at the doors (seed 000 §2, §4).

Upstream validates with Zod when an intent is created and never again; we do the same:
import, load and the API go through `parse_intent` / `parse_outcome`, while the read path
(`memory.buffer`) uses plain `json.loads`, because pydantic on a million rows is the
difference between a page and a coffee break.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

V1_TYPES = ("dialogue", "action")
V2_TYPES = ("dialogue", "action", "monologue", "thought")


class IntentError(ValueError):
    """An intent or outcome a door refuses; the message names the problem."""


class _Strict(BaseModel):
    # Zod's default object schema drops unknown keys and never coerces types; match it.
    model_config = ConfigDict(strict=True, extra="ignore", frozen=True)


class IntentV1(_Strict):
    type: Literal["dialogue", "action"]
    originalText: str
    description: str
    actorId: str
    targetIds: list[str]


class IntentV2(_Strict):
    type: Literal["dialogue", "action", "monologue", "thought"]
    content: str
    actorId: str
    targetIds: list[str]
    modifiers: list[str] = []


class Outcome(_Strict):
    isValid: bool
    reason: str


def _as_object(data: str | dict[str, Any], what: str) -> dict[str, Any]:
    if isinstance(data, str):
        try:
            data = json.loads(data)
        except ValueError as exc:
            raise IntentError(f"{what} is not JSON ({exc.args[0] if exc.args else exc})") from None
    if not isinstance(data, dict):
        raise IntentError(f"{what} must be a JSON object, not {_json_kind(data)}")
    return data


def _json_kind(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return type(value).__name__


def _describe(exc: ValidationError, what: str) -> str:
    """The first problem, in words a person fixing a world file can act on."""
    err = exc.errors()[0]
    loc = ".".join(str(part) for part in err["loc"])
    if err["type"] == "missing":
        return f'{what}: missing field "{loc}"'
    return f'{what}: field "{loc}" {err["msg"][:1].lower()}{err["msg"][1:]}'


def parse_intent(data: str | dict[str, Any]) -> IntentV1 | IntentV2:
    """Validate an intent of either era: v2 when it has `content`, else v1."""
    obj = _as_object(data, "intent")
    kind = obj.get("type")
    is_v2 = "content" in obj
    allowed = V2_TYPES if is_v2 else V1_TYPES
    if "type" not in obj:
        raise IntentError('intent: missing field "type"')
    if kind not in allowed:
        shown = json.dumps(kind, ensure_ascii=False) if isinstance(kind, str) else repr(kind)
        era = "v2" if is_v2 else "v1"
        raise IntentError(
            f"intent: unknown type {shown} (a {era} intent is one of {', '.join(allowed)})"
        )
    model = IntentV2 if is_v2 else IntentV1
    try:
        return model.model_validate(obj)
    except ValidationError as exc:
        raise IntentError(_describe(exc, "intent")) from None


def parse_outcome(data: str | dict[str, Any] | None) -> Outcome | None:
    """Validate an Architect outcome; None (SQL NULL or JSON null) means there is none."""
    if data is None:
        return None
    if isinstance(data, str):
        try:
            data = json.loads(data)
        except ValueError as exc:
            raise IntentError(f"outcome is not JSON ({exc.args[0] if exc.args else exc})") from None
        if data is None:
            return None
    if not isinstance(data, dict):
        raise IntentError(f"outcome must be a JSON object, not {_json_kind(data)}")
    try:
        return Outcome.model_validate(data)
    except ValidationError as exc:
        raise IntentError(_describe(exc, "outcome")) from None
