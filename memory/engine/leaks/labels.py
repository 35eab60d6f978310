"""Stored labels worth a second look (issue 28 item 5): empty, over-long, or another entity's
true name. Found for each viewer when its leak findings are (stored.refresh keeps them on its
scan row, `LeakScan.labels_json`), so the save page reads a few rows instead of every label of
the save: 200,000 on a 2,000-entity world, most of that page's time."""

from __future__ import annotations

import json
from collections.abc import Mapping, Set
from typing import NamedTuple

from memory.engine.aliases import (
    MAX_LABEL_CHARS,
    AliasesJsonError,
    label_suspicions,
    parse_aliases_json,
)


class Suspicious(NamedTuple):
    target_id: str
    label: str
    reasons: tuple[str, ...]  # aliases.label_suspicions, in words


def suspicious_of(
    viewer_id: str, aliases_json: str | None, owners: Mapping[str, Set[str]]
) -> list[Suspicious]:
    """The viewer's stored labels worth a second look, in its alias map's order; `owners` is
    knowledge.every_name_owner(). A corrupt alias map is the aliases panel's to report, not
    counted here."""
    try:
        aliases = parse_aliases_json(aliases_json)
    except AliasesJsonError:
        return []
    found = []
    for target_id, label in aliases.items():
        # Most labels are none of the three: said without a call each.
        stripped = label.strip()
        if target_id == viewer_id or (
            stripped and len(label) <= MAX_LABEL_CHARS and stripped not in owners
        ):
            continue
        if reasons := label_suspicions(label, target_id, owners):
            found.append(Suspicious(target_id, label, reasons))
    return found


def to_json(found: list[Suspicious]) -> str:
    return json.dumps([[s.target_id, s.label, list(s.reasons)] for s in found])


def from_json(text: str) -> list[Suspicious]:
    """What `to_json` kept; a row that is not that (hand-edited) reads as nothing kept."""
    try:
        return [Suspicious(t, label, tuple(reasons)) for t, label, reasons in json.loads(text)]
    except (ValueError, TypeError):
        return []
