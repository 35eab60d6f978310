"""JSON and text from outside, read strictly: the rules every write door shares.

The standard parser (its messages are the ones users already see), with what it lets
through refused: nesting past Python's recursion limit (a RecursionError, not a one-line
refusal), deeper than MAX_DEPTH, NUL (PostgreSQL refuses it in text), lone surrogates (they
cannot be encoded as UTF-8, so no backend could store them and no page could show them),
NaN and Infinity (not JSON: omnia's `JSON.parse` fails on an exported file that holds
them), a key twice in one object (the last silently won), integers past MAX_INT_DIGITS
(Python stops at 4,300 digits with a ValueError), and any one text longer than MAX_TEXT.

MAX_TEXT bounds every text field at every door (an import, a scenario, a followed game, the
API): the longest in the bundled omnia saves (tests/fixtures/omnia/) is an intent_json of 258
characters, the longest in their scenarios 188; 65,536 is 250 times that, and a text of a
megabyte crashed the leak scanner (issue 29).
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from pydantic_core import from_json

from memory.engine.errors import InvalidInput

MAX_DEPTH = 64  # far past anything omnia writes (an intent is 2 levels deep)
MAX_TEXT = 65_536  # characters in any one text field (README, "Limits")
MAX_INT_DIGITS = 19  # a signed 64-bit integer: what either backend stores


class JsonRefused(ValueError):
    """JSON the standard parser would take but a door refuses (NaN, a key twice, a huge
    integer): the message says what, in words."""


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj: dict[str, Any] = {}
    for key, value in pairs:
        if key in obj:
            raise JsonRefused(f"duplicate key {key[:80]!r} in one object")
        obj[key] = value
    return obj


def _constant(name: str) -> Any:
    raise JsonRefused(f"{name} is not a JSON number")


def _integer(digits: str) -> int:
    if len(digits.lstrip("-")) > MAX_INT_DIGITS:
        raise JsonRefused(
            f"integer {digits[:20]}… has {len(digits.lstrip('-')):,} digits; "
            f"the limit is {MAX_INT_DIGITS}"
        )
    return int(digits)


def parse(text: str | bytes) -> Any:
    """json.loads, strictly: JsonRefused on NaN/Infinity, a duplicate key or a huge integer;
    json.JSONDecodeError, UnicodeDecodeError and RecursionError as json.loads raises them."""
    return json.loads(text, object_pairs_hook=_object, parse_constant=_constant, parse_int=_integer)


_SURROGATE = re.compile("[\ud800-\udfff]")
_ESCAPED_PROBLEM = re.compile(r"\\u(?:0000|[dD][89a-fA-F][0-9a-fA-F]{2})")


def text_problem(value: str) -> str | None:
    """Why this text cannot be stored as given, or None."""
    if len(value) > MAX_TEXT:
        return f"is {len(value):,} characters long; the limit is {MAX_TEXT:,}"
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
        value = parse(text)
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


_SPACED_KEY_END = re.compile(r'"\s+:')
_BIGGEST_INT = 10**MAX_INT_DIGITS


def _maybe_refused(text: str) -> bool:
    """Could `parse` refuse this text? One fast parse (pydantic-core takes NaN and Infinity
    and keeps the last of a key twice) and a walk of what it gave: a float that is not finite,
    an integer past MAX_INT_DIGITS, or fewer distinct keys than the text has `":` key ends.
    A few microseconds a row, where the strict parse with its hooks costs several times more."""
    try:
        value = from_json(text)
    except ValueError:
        return True  # the strict parse says what (a huge integer), or the caller does
    keys, stack = 0, [value]
    while stack:
        item = stack.pop()
        kind = item.__class__  # exact JSON types: from_json makes no subclasses
        if kind is str:
            continue
        if kind is dict:
            keys += len(item)
            stack.extend(item.values())
        elif kind is list:
            stack.extend(item)
        elif kind is float:
            if not math.isfinite(item):
                return True
        elif kind is int and not -_BIGGEST_INT < item < _BIGGEST_INT:
            return True
    if not keys:
        return False
    ends = text.count('":')
    if '" ' in text or '"\n' in text or '"\t' in text or '"\r' in text:
        ends += len(_SPACED_KEY_END.findall(text))
    return ends > keys


def json_text_problem(text: str) -> str | None:
    """A cheap screen for stored JSON text already known to parse: longer than MAX_TEXT, NUL
    or a lone surrogate written as an escape, NaN/Infinity, a key twice, or nesting past
    MAX_DEPTH. A million rows pass here, so the full walk runs only when a count says it might
    find something."""
    if len(text) > MAX_TEXT:
        return f"is {len(text):,} characters long; the limit is {MAX_TEXT:,}"
    if _maybe_refused(text):
        try:
            parse(text)
        except JsonRefused as exc:
            return str(exc)
        except (ValueError, RecursionError):
            pass  # not this screen's to say: the caller parses it
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
