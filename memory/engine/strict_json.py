"""JSON and text from outside, read strictly: the rules every write door shares.

The standard parser (its messages are the ones users already see), with what it lets
through refused after it: nesting past Python's recursion limit (a RecursionError, not a
one-line refusal), deeper than MAX_DEPTH, NUL (PostgreSQL refuses it in text), and lone
surrogates (they cannot be encoded as UTF-8, so no backend could store them and no page
could show them).
"""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic_core import from_json

from memory.engine.errors import InvalidInput

MAX_DEPTH = 64  # far past anything omnia writes (an intent is 2 levels deep)

_SURROGATE = re.compile("[\ud800-\udfff]")
_ESCAPED_PROBLEM = re.compile(r"\\u(?:0000|[dD][89a-fA-F][0-9a-fA-F]{2})")


def text_problem(value: str) -> str | None:
    """Why this text cannot be stored as given, or None."""
    if "\x00" in value:
        return "contains a NUL character"
    if _SURROGATE.search(value):
        return "contains a lone surrogate (not Unicode text)"
    return None


def value_problem(value: Any, path: str = "") -> tuple[str, str] | None:
    """(path, why) of the first string or nesting in a loaded JSON value a door refuses, or
    None. Iterative: a value nested a thousand levels deep is refused, not a RecursionError."""
    stack: list[tuple[Any, str, int]] = [(value, path, 1)]
    while stack:
        item, at, depth = stack.pop()
        if isinstance(item, str):
            problem = text_problem(item)
            if problem:
                return at or "value", problem
        elif isinstance(item, dict | list):
            if depth > MAX_DEPTH:
                # the path down to where the nesting ran past the bound, not 64 × "[0]"
                shown = at if len(at) <= 80 else at[:80] + "…"
                return shown or "value", f"nested deeper than {MAX_DEPTH} levels"
            if isinstance(item, dict):
                children = []
                for key, child in item.items():
                    problem = text_problem(key) if isinstance(key, str) else None
                    if problem:
                        return f"{at}.{key!r}" if at else repr(key), f"key {problem}"
                    children.append((child, f"{at}.{key}" if at else str(key), depth + 1))
            else:
                children = [(child, f"{at}[{i}]", depth + 1) for i, child in enumerate(item)]
            stack.extend(reversed(children))
    return None


def loads(text: str | bytes, what: str) -> Any:
    """Parse JSON from outside and check it; InvalidInput naming `what` (and the path inside
    it) on the first problem."""
    try:
        value = json.loads(text)
    except RecursionError:
        raise InvalidInput(f"{what}: nested deeper than {MAX_DEPTH} levels", field=what) from None
    except ValueError as exc:  # UnicodeDecodeError included
        raise InvalidInput(
            f"{what} is not JSON ({exc.args[0] if exc.args else exc})", field=what
        ) from None
    found = value_problem(value)
    if found:
        raise InvalidInput(f"{what}: {found[0]} {found[1]}", field=what)
    return value


def json_text_problem(text: str) -> str | None:
    """A cheap screen for stored JSON text already known to parse: NUL or a lone surrogate
    written as an escape, or nesting past MAX_DEPTH. A million rows pass here, so the full
    walk runs only when a count says it might find something."""
    if "\\u" in text and _ESCAPED_PROBLEM.search(text):
        try:
            found = value_problem(from_json(text))
        except ValueError as exc:
            return f"not JSON ({exc})"
        if found:
            return f"{found[0]} {found[1]}"
    if text.count("[") + text.count("{") > MAX_DEPTH:
        depth = deepest = 0
        in_string = escaped = False
        for char in text:
            if in_string:
                if escaped:
                    escaped = False
                elif char == "\\":
                    escaped = True
                elif char == '"':
                    in_string = False
            elif char == '"':
                in_string = True
            elif char in "[{":
                depth += 1
                deepest = max(deepest, depth)
            elif char in "]}":
                depth -= 1
        if deepest > MAX_DEPTH:
            return f"nested deeper than {MAX_DEPTH} levels"
    return None
