"""The leak rescan builds prompts for many viewers at once (issue 25 item 4): what each viewer
gets from the batch is what it gets alone, byte for byte, on the demo world and on every
world upstream wrote (tests/fixtures/omnia), for any choice and order of viewers and with
chunks small enough that every read is split across statements."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memory.engine import newest
from memory.engine.knowledge import get_viewer, viewer_of
from memory.engine.leaks import world_scan
from memory.engine.leaks.stored import refresh, stored_findings
from memory.engine.leaks.world_scan import scan_groups, scan_viewer
from memory.engine.longterm import reader
from memory.engine.projections import doors, run_cycle
from memory.engine.prompt import prompt_context, prompt_contexts
from memory.models import ObjectType, Save, WorldObject
from memory.worlds.demo import load_demo
from memory.worlds.omnia_import import import_omnia
from memory.worlds.scenario import load_world
from memory.worlds.synthetic import Shape, generate_omnia_world
from tests.helpers import FIXTURES

WORLDS = {
    "demo": lambda tmp: load_demo(),
    "omnia 74ffb45 tavern": lambda tmp: import_omnia(FIXTURES / "omnia-74ffb45-tavern.sqlite"),
    "omnia head tavern": lambda tmp: import_omnia(FIXTURES / "omnia-head-tavern.sqlite"),
    "head tavern scenario": lambda tmp: load_world(FIXTURES / "omnia-head-tavern.scenario.json"),
    "talking room fadea41": lambda tmp: load_world(
        FIXTURES / "omnia-scenario-talking-room-fadea41.json"
    ),
    "talking room c292626": lambda tmp: load_world(
        FIXTURES / "omnia-scenario-talking-room-c292626.json"
    ),
    "generated harbour": lambda tmp: _harbour(tmp),
}


def _harbour(tmp: Path) -> None:
    """Many viewers, each with more memories than a prompt shows and more sessions than a
    digest names."""
    path = tmp / "harbour.sqlite"
    generate_omnia_world(path, Shape.named("uuid-head", rows=1500, entities=12, hot_rows=400))
    import_omnia(path)


def _entities() -> list[WorldObject]:
    return list(WorldObject.objects.filter(type=ObjectType.ENTITY).order_by("world_id", "id"))


@pytest.fixture(params=list(WORLDS))
def world(request, db, tmp_path, activate_save) -> list[str]:
    """The world loaded as a save of its own, active, and folded; its entities' ids."""
    WORLDS[request.param](tmp_path)
    activate_save(Save.objects.latest("pk"))  # the save the loader just made
    run_cycle()
    return [o.id for o in _entities()]


@pytest.fixture
def small_chunks(monkeypatch) -> None:
    """Two or three ids a statement: every batch read crosses chunk boundaries."""
    monkeypatch.setattr(newest, "KEYS_PER_STATEMENT", 2)
    monkeypatch.setattr(reader, "_IDS_PER_QUERY", 3)
    monkeypatch.setattr(doors, "_IDS_PER_QUERY", 2)
    monkeypatch.setattr(world_scan, "PROMPT_CHUNK", 3)


def test_every_viewer_together_reads_as_each_alone(world, small_chunks):
    alone = [prompt_context(get_viewer(v)) for v in world]
    together = prompt_contexts([viewer_of(o) for o in _entities()])
    assert [p.viewer_id for p in together] == world
    assert [p.text for p in together] == [p.text for p in alone]
    # Sections with the row each line came from: what a finding links to.
    assert together == alone


def test_any_viewers_in_any_order_read_as_each_alone(world, small_chunks):
    alone = {v: prompt_context(get_viewer(v)) for v in world}

    @settings(
        max_examples=25,
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )
    @given(st.lists(st.sampled_from(world), max_size=8))
    def check(picked: list[str]) -> None:
        together = prompt_contexts([get_viewer(v) for v in picked])
        assert together == [alone[v] for v in picked]

    check()


def test_the_rescan_finds_and_stores_what_each_viewer_alone_finds(world, small_chunks):
    alone = {v: [f.to_dict() for f in scan_viewer(v).findings] for v in world}
    groups: dict[str | None, list[WorldObject]] = {}
    for obj in _entities():
        groups.setdefault(obj.world_id, []).append(obj)
    together = {s.viewer_id: [f.to_dict() for f in s.findings] for s in scan_groups(groups)}
    assert together == alone
    refresh(world)
    kept = stored_findings(world)
    assert {v: [f.to_dict() for f in found] for v, found in kept.items()} == alone


def test_a_digest_of_many_counts_each_viewers_rows_as_its_own(world, small_chunks):
    alone = {v: doors.digest(v) for v in world}
    assert doors.digests(world) == alone
