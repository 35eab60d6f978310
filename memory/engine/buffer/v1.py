"""The seed's serializer (seed 000 §2): a v1 intent (`originalText`/`description`) rendered
byte for byte like omnia's `serializeSubjectiveBufferEntry`, quirks included."""

from __future__ import annotations

from typing import Any

from memory.engine.aliases import AliasHolder, resolve_alias
from memory.engine.buffer.entry import Undeliverable, outcome_suffix
from memory.engine.buffer.jsdate import js_time_string


def _str_list(intent: dict[str, Any], key: str) -> list[str]:
    value = intent.get(key)
    if type(value) is not list or not all(type(v) is str for v in value):
        raise Undeliverable(f"intent field {key!r} must be a list of strings")
    return value


def render_v1(timestamp: str, intent: dict[str, Any], outcome: object, viewer: AliasHolder) -> str:
    kind = intent.get("type")
    if kind != "dialogue" and kind != "action":  # two compares beat a set here
        raise Undeliverable(f"unknown v1 intent type {kind!r}")
    actor = intent.get("actorId")
    if type(actor) is not str:
        raise Undeliverable("intent has no string actorId")
    description = intent.get("description")
    if type(description) is not str:
        raise Undeliverable("v1 intent has no string description")
    targets = _str_list(intent, "targetIds")
    if type(timestamp) is not str:
        raise Undeliverable("timestamp is not a string")
    time = js_time_string(timestamp)
    if kind == "dialogue":
        # `join(", ") || "someone"`: a single target whose alias is "" also reads "someone".
        named = ", ".join([resolve_alias(viewer, t) for t in targets]) or "someone"
        return f'[{time}] {resolve_alias(viewer, actor)} spoke to {named}: "{description}"'
    return f"[{time}] {resolve_alias(viewer, actor)} {description}{outcome_suffix(outcome)}"
