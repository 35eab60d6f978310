"""What the serializer reads, and how it refuses: an entry's shape, the outcome both eras add
to a line, and `Undeliverable` for a stored row that cannot be shown."""

from __future__ import annotations

from typing import Any, Protocol


class Undeliverable(Exception):  # the seed's word for a row that cannot be shown
    """A stored row that cannot be parsed or rendered; `reason` says why."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class Entry(Protocol):
    @property
    def timestamp(self) -> str: ...

    @property
    def intent(self) -> dict[str, Any]: ...

    @property
    def outcome(self) -> dict[str, Any] | None: ...


def outcome_suffix(outcome: object) -> str:
    """ " (Outcome: Succeeded)" or " (Outcome: Failed - <reason>)", as both eras append it."""
    if not outcome:
        # JavaScript's `if (entry.outcome)`: a missing, null or empty-string outcome adds nothing.
        return ""
    if type(outcome) is not dict:
        raise Undeliverable("outcome is not an object")
    valid = outcome.get("isValid")
    if valid is True:
        return " (Outcome: Succeeded)"
    reason = outcome.get("reason")
    if valid is not False or type(reason) is not str:
        raise Undeliverable("outcome needs a boolean isValid and a string reason")
    return f" (Outcome: Failed - {reason})"


def v2_parts(intent: dict) -> tuple[str, str, str]:
    """(type, actorId, content) of a later-era intent, or Undeliverable: what both readings
    of a v2 row refuse alike, so both are shown or neither is."""
    kind = intent.get("type")
    if kind not in ("dialogue", "action", "monologue", "thought"):
        raise Undeliverable(f"unknown v2 intent type {kind!r}")
    actor = intent.get("actorId")
    if type(actor) is not str:
        raise Undeliverable("intent has no string actorId")
    content = intent["content"]
    if type(content) is not str:
        raise Undeliverable("v2 intent content is not a string")
    return kind, actor, content
