"""Long-term entry names: trimmed once, at the door that stores them (seed 004, issue 13.7).

The write-home name rule compares names by exact equality, which is safe only because "the
frontmatter parse already trimmed": omnia reads `name:` from an entry's frontmatter, and that
parse drops the surrounding whitespace. Every door here that stores a name does the same
through `committed_name`, so exact equality after it means what a reader would call the same
name. An empty name, like a missing one, is None: the entry is then known by its slug's last
segment.

Entries stored before names were trimmed keep their exact name (nothing is rewritten behind
the author's back); `same_name_after_trim` finds the ones that read as one name but do not
shadow each other, so the faces can warn about them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from memory.engine.longterm.shadowing import EntryHeader


def committed_name(value: str | None) -> str | None:
    """A name as a door stores it: surrounding whitespace dropped; empty means no name."""
    if value is None:
        return None
    trimmed = value.strip()
    return trimmed or None


@dataclass(frozen=True, slots=True)
class NameWarning:
    name: str  # the name they all read as, trimmed
    entries: tuple[tuple[str, str], ...]  # (id, the exact stored name), by id

    def as_dict(self) -> dict:
        return {"name": self.name, "entries": [{"id": i, "name": n} for i, n in self.entries]}

    @property
    def text(self) -> str:
        names = ", ".join(f"{i} {n!r}" for i, n in self.entries)
        return (
            f"same name after trimming, {self.name!r}: {names} (stored before names were "
            "trimmed; only the exact name shadows)"
        )


def same_name_after_trim(headers: Iterable[EntryHeader]) -> list[NameWarning]:
    """Committed names that differ exactly but are one name once trimmed, sorted by name."""
    groups: dict[str, dict[str, list[str]]] = {}
    for h in headers:
        if h.name is None:
            continue
        trimmed = h.name.strip()
        if trimmed:
            groups.setdefault(trimmed, {}).setdefault(h.name, []).append(h.id)
    warnings = []
    for trimmed, exact in sorted(groups.items()):
        if len(exact) > 1:
            entries = sorted((i, name) for name, ids in exact.items() for i in ids)
            warnings.append(NameWarning(trimmed, tuple(entries)))
    return warnings
