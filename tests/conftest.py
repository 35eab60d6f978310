"""The named cast every test can lean on, built with plain ORM calls.

alice (knows bob as "the hooded figure", charlie as "the bartender"), bob (true name Gareth,
PRIVATE; knows alice as "the traveller"), charlie the bartender (knows bob as "Gareth").
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.helpers import FIXTURES


@dataclass
class Cast:
    world: object
    alice: object
    bob: object
    charlie: object


@pytest.fixture(autouse=True)
def _sole_save():
    """Every test reads and writes in "the only save there is", as a command without --save
    does; a test with two saves names the one it means with `use(save)`."""
    from memory.active_save import SOLE, activate, deactivate, saves_changed

    saves_changed()  # the cache of SOLE must not outlive the test database's rollback
    token = activate(SOLE)
    yield
    deactivate(token)
    saves_changed()


@pytest.fixture
def save(db):
    """An empty save named "test", for a test that builds its rows by hand."""
    from memory.models import Save

    return Save.objects.create(name="test", kind="scenario", era="v2")


@pytest.fixture
def fixtures_dir() -> Path:
    return FIXTURES


@pytest.fixture
def demo(db) -> None:
    """The demo world (harbor-town: npc-pip, npc-tobiah, npc-sable …) loaded and folded."""
    from memory.engine.projections import run_cycle
    from memory.worlds.demo import load_demo

    load_demo()
    run_cycle()


@pytest.fixture
def cast(db) -> Cast:
    from memory.models import Attribute, AttributeAcl, Save, WorldObject

    Save.objects.create(name="cast", kind="scenario", era="v2")
    world = WorldObject.objects.create(
        id="tavern", type="world", clock_iso="2026-07-06T12:30:00.000Z"
    )
    Attribute.objects.create(
        object_id=world.id, name="name", value="The Rusty Flagon", visibility="PUBLIC"
    )

    def entity(id_: str, location: str, aliases: dict[str, str], attrs: list[tuple[str, str, str]]):
        obj = WorldObject.objects.create(
            id=id_,
            type="entity",
            world_id=world.id,
            location_id=location,
            aliases_json=json.dumps(list(aliases.items()), separators=(",", ":")),
            is_agent=1,
        )
        for name, value, visibility in attrs:
            Attribute.objects.create(
                object_id=obj.id, name=name, value=value, visibility=visibility
            )
        return obj

    alice = entity(
        "alice",
        "tavern-main",
        {"bob": "the hooded figure", "charlie": "the bartender"},
        [
            ("name", "Alice", "PUBLIC"),
            ("appearance", "a young woman in a dusty green travelling cloak", "PUBLIC"),
            ("purpose", "searching for her missing brother", "PRIVATE"),
        ],
    )
    bob = entity(
        "bob",
        "tavern-main",
        {"alice": "the traveller"},
        [
            ("name", "Gareth", "PRIVATE"),
            ("appearance", "a tall man hidden under a dark hooded cloak", "PUBLIC"),
            ("weapon", "a dagger strapped to his ankle", "PRIVATE"),
        ],
    )
    charlie = entity(
        "charlie",
        "tavern-main",
        {"bob": "Gareth"},
        [
            ("name", "Charlie", "PUBLIC"),
            ("occupation", "bartender", "PUBLIC"),
            ("debt", "owes 40 silver to the thieves' guild", "PRIVATE"),
        ],
    )
    AttributeAcl.objects.create(object_id=bob.id, attribute_name="name", entity_id="charlie")
    AttributeAcl.objects.create(object_id=bob.id, attribute_name="weapon", entity_id="charlie")
    return Cast(world=world, alice=alice, bob=bob, charlie=charlie)
