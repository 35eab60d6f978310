"""Way in: the bundled demo world (memory/demo/), loaded like any scenario."""

from __future__ import annotations

from pathlib import Path

from memory.worlds.report import ImportReport
from memory.worlds.scenario import load_world

DEMO_PATH = Path(__file__).resolve().parents[1] / "demo" / "demo_world.json"


DEMO_SAVE = "demo"


def load_demo(*, replace: bool = False, command: str = "", actor: str = "") -> ImportReport:
    """The demo world, as the save "demo"."""
    return load_world(
        DEMO_PATH,
        source="demo_world.json",
        as_name=DEMO_SAVE,
        replace=replace,
        command=command,
        actor=actor,
        kind="demo",
    )
