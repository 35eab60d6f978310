"""Way in: the bundled demo world (memory/demo/), loaded like any scenario."""

from __future__ import annotations

from pathlib import Path

from memory.worlds.report import ImportReport
from memory.worlds.scenario import load_world

DEMO_PATH = Path(__file__).resolve().parents[1] / "demo" / "demo_world.json"


def load_demo() -> ImportReport:
    return load_world(DEMO_PATH, source="demo_world.json")
