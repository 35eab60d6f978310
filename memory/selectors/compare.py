"""The compare page and its JSON twin read the same thing: the query's parameters checked
once here, then the engine's comparison (memory/engine/compare/) as a dict.

The parameters are the command's: `a` and `b` are two saves (with `viewer`, one viewer;
without, every viewer both hold), or, with `save`, two viewers in that save. A page never
writes, so nothing is folded or rescanned here: a save with unfolded rows is said so, and
a viewer whose stored findings are behind is scanned in memory.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from memory import inputs
from memory.engine.compare import compare_saves, compare_viewers
from memory.engine.errors import InvalidInput
from memory.engine.saves import live_saves
from memory.selectors.leaks import named_reason

PARAMS = ("a", "b", "viewer", "save")
# Longer than any id or save name people type; a longer value names nothing.
MAX_PARAM = 1000


def params_of(query: Mapping[str, Any]) -> dict[str, str]:
    """The non-empty parameters, stripped; InvalidInput (naming the field) for NUL or a
    value no save or id could be."""
    found: dict[str, str] = {}
    for name in PARAMS:
        raw = query.get(name)
        value = (inputs.text(raw if isinstance(raw, str) else None, name) or "").strip()
        if len(value) > MAX_PARAM:
            raise InvalidInput(f"{name} is longer than {MAX_PARAM} characters", field=name)
        if value:
            found[name] = value
    return found


def comparison(params: Mapping[str, str]) -> dict[str, Any]:
    """The comparison the parameters ask for, as the engine's `as_dict()`."""
    for name in ("a", "b"):
        if not params.get(name):
            what = "viewer" if params.get("save") else "save"
            raise InvalidInput(f"{name} is required: the {what} to compare", field=name)
    if params.get("save"):
        if params.get("viewer"):
            raise InvalidInput(
                "viewer compares two saves; with save, a and b are the two viewers",
                field="viewer",
            )
        return compare_viewers(params["save"], params["a"], params["b"]).as_dict()
    return compare_saves(params["a"], params["b"], params.get("viewer")).as_dict()


def _named_ids(value: Any, into: dict[str, str]) -> dict[str, str]:
    """Every person or place the comparison names ({"id", "name"} anywhere in it)."""
    if isinstance(value, dict):
        if isinstance(value.get("id"), str) and isinstance(value.get("name"), str):
            into.setdefault(value["id"], value["name"])
        for item in value.values():
            _named_ids(item, into)
    elif isinstance(value, list):
        for item in value:
            _named_ids(item, into)
    return into


def with_reasons_by_name(result: dict[str, Any]) -> dict[str, Any]:
    """The page's copy of a comparison: each leak finding's reason also by name (from the
    names the comparison already carries; the JSON twin keeps the engine's ids)."""
    names = _named_ids(result, {})
    for section in result.get("viewers", []):
        viewer_id = section["viewer"]["id"]
        for state in ("new", "fixed", "unchanged"):
            for finding in (section.get("leaks") or {}).get(state, []):
                finding["reason_named"] = named_reason({"viewer_id": viewer_id, **finding}, names)
    return result


def save_names() -> list[str]:
    """The saves the form offers."""
    return [s.name for s in live_saves()]
