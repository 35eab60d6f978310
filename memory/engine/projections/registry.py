"""The closed registry of memory projections: a projection is a name, a fold and a door,
registered together or not at all. Today it names one, `session`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from memory.engine.projections import doors
from memory.engine.projections.sessions import fold_session


@dataclass(frozen=True)
class Projection:
    """A projection is a name, a fold and a door, registered together or not at all."""

    name: str
    fold: Callable[..., Any]
    door: Callable[..., Any]

    def __post_init__(self) -> None:
        if not self.name:
            raise TypeError("a memory projection needs a name")
        if not callable(self.fold):
            raise TypeError(f"memory projection {self.name!r} registered without a fold")
        if not callable(self.door):
            raise TypeError(f"memory projection {self.name!r} registered without a door")


def _registry(*projections: Projection) -> dict[str, Projection]:
    names = [p.name for p in projections]
    if len(set(names)) != len(names):
        raise TypeError(f"memory projection registered twice: {names}")
    return {p.name: p for p in projections}


MEMORY_PROJECTIONS: dict[str, Projection] = _registry(
    Projection(name="session", fold=fold_session, door=doors.sessions),
)
MEMORY_PROJECTION_NAMES: frozenset[str] = frozenset(MEMORY_PROJECTIONS)
