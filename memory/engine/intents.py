"""Intent and outcome schemas for both omnia eras, checked at the doors (seed 000 §2, §4).

Upstream validates with Zod when an intent is created and never again; we do the same:
import, load and the API go through `parse_intent` / `parse_outcome`, while the read path
(`memory.engine.buffer`) uses plain `json.loads`, because pydantic on a million rows is the
difference between a page and a coffee break.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from memory.engine import strict_json
from memory.engine.errors import InvalidInput

V1_TYPES = ("dialogue", "action")
V2_TYPES = ("dialogue", "action", "monologue", "thought")


class IntentError(InvalidInput):
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


def _loaded(data: Any, what: str) -> Any:
    """Text parsed strictly, or an already-parsed value checked the same way (NUL, lone
    surrogates, depth): an API body arrives parsed by another parser."""
    try:
        if isinstance(data, str):
            return strict_json.loads(data, what)
        found = strict_json.value_problem(data)
    except InvalidInput as exc:
        raise IntentError(str(exc), field=what) from None
    if found:
        raise IntentError(f"{what}: {found[0]} {found[1]}", field=what)
    return data


def _as_object(data: str | dict[str, Any], what: str) -> dict[str, Any]:
    data = _loaded(data, what)
    if not isinstance(data, dict):
        raise IntentError(f"{what} must be a JSON object, not {_json_kind(data)}", field=what)
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
        raise IntentError('intent: missing field "type"', field="intent")
    if kind not in allowed:
        shown = json.dumps(kind, ensure_ascii=False) if isinstance(kind, str) else repr(kind)
        era = "v2" if is_v2 else "v1"
        raise IntentError(
            f"intent: unknown type {shown} (a {era} intent is one of {', '.join(allowed)})",
            field="intent",
        )
    model = IntentV2 if is_v2 else IntentV1
    try:
        return model.model_validate(obj)
    except ValidationError as exc:
        raise IntentError(_describe(exc, "intent"), field="intent") from None


def parse_outcome(data: str | dict[str, Any] | None) -> Outcome | None:
    """Validate an Architect outcome; None (SQL NULL or JSON null) means there is none."""
    if data is None:
        return None
    data = _loaded(data, "outcome")
    if data is None:
        return None
    if not isinstance(data, dict):
        raise IntentError(f"outcome must be a JSON object, not {_json_kind(data)}", field="outcome")
    try:
        return Outcome.model_validate(data)
    except ValidationError as exc:
        raise IntentError(_describe(exc, "outcome"), field="outcome") from None


# --- validating stored JSON in bulk (an import's door) ----------------------------------------------


def intent_json_problem(text: str) -> str | None:
    """Why this stored intent JSON is invalid, or None. The fast path lets pydantic-core parse
    and validate in one call (a million rows pass here); only a failure goes through
    parse_intent, for its precise message."""
    model = IntentV2 if '"content"' in text else IntentV1
    try:
        model.__pydantic_validator__.validate_json(text)
        problem = strict_json.json_text_problem(text)
        return f"intent: {problem}" if problem else None
    except ValidationError:
        pass
    try:
        parse_intent(text)
    except IntentError as exc:
        return str(exc)
    return None


def outcome_json_problem(text: str | None) -> str | None:
    """Why this stored outcome JSON is invalid, or None (NULL is no outcome, and valid)."""
    if text is None:
        return None
    try:
        Outcome.__pydantic_validator__.validate_json(text)
        problem = strict_json.json_text_problem(text)
        return f"outcome: {problem}" if problem else None
    except ValidationError:
        pass
    try:
        parse_outcome(text)
    except IntentError as exc:
        return str(exc)
    return None


def first_invalid_row(rows: list[tuple[str, str, str | None]]) -> tuple[int, str] | None:
    """(index, "intent_json: …"/"outcome_json: …") of the first row of (id, intent JSON,
    outcome JSON) that is invalid, else None. Pure and picklable: a large import runs it on
    each batch in a second process while it inserts the batch before."""
    for index, (_row_id, intent, outcome) in enumerate(rows):
        problem = intent_json_problem(intent)
        if problem is not None:
            return index, f"intent_json: {problem}"
        problem = outcome_json_problem(outcome)
        if problem is not None:
            return index, f"outcome_json: {problem}"
    return None
