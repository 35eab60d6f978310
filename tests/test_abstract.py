"""abstract(): rollup, abstracted_into and edges land together, pinned to the generation."""

from __future__ import annotations

import pytest

import memory.engine.abstract as abstract_module
from memory.engine.abstract import AbstractConflict, AbstractError, abstract
from memory.engine.clock import now_us
from memory.engine.errors import NotFound
from memory.engine.shards import generation_of
from memory.models import AbstractionEdge, BufferEntry, LedgerEntry
from tests.helpers import write


def home_entry(owner: str, id_: str, scope: str | None = None) -> LedgerEntry:
    return LedgerEntry.objects.create(
        id=id_,
        owner_id=owner,
        timestamp="2026-07-06T12:00:00.000Z",
        content="lore",
        importance=3,
        scope_id=scope or f"home:{owner}",
        slug=id_,
        name=id_,
        created_at=now_us(),
    )


def landed() -> tuple[list, list, list]:
    return (
        sorted(LedgerEntry.objects.values_list("id", "scope_id", "name", "slug", "content")),
        sorted(
            BufferEntry.objects.exclude(abstracted_into=None).values_list("id", "abstracted_into")
        ),
        sorted(
            AbstractionEdge.objects.values_list("member_id", "member_kind", "rollup_id", "owner_id")
        ),
    )


def test_abstract_lands_rollup_marks_and_edges_and_bumps_generation(cast):
    a, b = write("alice", 0), write("alice", 1)
    lore = home_entry("alice", "old-lore")
    generation = generation_of("alice")
    rollup = abstract(
        "alice",
        [a, b, lore.id],
        name="The Meeting",
        body="We met a stranger.",
        expected_generation=generation,
        rollup_id="R1",
    )
    assert (
        rollup.id,
        rollup.owner_id,
        rollup.scope_id,
        rollup.slug,
        rollup.name,
        rollup.content,
        rollup.timestamp,
    ) == (
        "R1",
        "alice",
        "home:alice",
        "the-meeting",
        "The Meeting",
        "We met a stranger.",
        cast.world.clock_iso,
    )
    assert landed() == (
        [
            ("R1", "home:alice", "The Meeting", "the-meeting", "We met a stranger."),
            ("old-lore", "home:alice", "old-lore", "old-lore", "lore"),
        ],
        sorted([(a, "R1"), (b, "R1")]),
        sorted(
            [
                (a, "buffer", "R1", "alice"),
                (b, "buffer", "R1", "alice"),
                ("old-lore", "ledger", "R1", "alice"),
            ]
        ),
    )
    assert generation_of("alice") == generation + 1


def test_abstract_stale_generation_is_a_conflict_and_nothing_lands(cast):
    a = write("alice", 0)
    stale = generation_of("alice")
    write("alice", 1)
    with pytest.raises(AbstractConflict, match="generation"):
        abstract("alice", [a], name="n", body="b", expected_generation=stale)
    assert landed() == ([], [], [])


def test_abstract_already_absorbed_member_is_a_conflict(cast):
    a, b = write("alice", 0), write("alice", 1)
    abstract(
        "alice",
        [a],
        name="first",
        body="b",
        expected_generation=generation_of("alice"),
        rollup_id="R1",
    )
    before = landed()
    with pytest.raises(AbstractConflict, match="already absorbed"):
        abstract(
            "alice", [b, a], name="second", body="b", expected_generation=generation_of("alice")
        )
    assert landed() == before


def test_abstract_members_of_another_owner_or_scope_are_conflicts(cast):
    mine, theirs = write("alice", 0), write("bob", 0)
    foreign = home_entry("bob", "bob-lore")
    layer = home_entry("alice", "canon", scope="layer:canon")
    for member in (theirs, foreign.id, layer.id, "no-such-row"):
        with pytest.raises(AbstractConflict):
            abstract(
                "alice",
                [mine, member],
                name="n",
                body="b",
                expected_generation=generation_of("alice"),
            )
    assert landed()[1:] == ([], [])


def test_abstract_refuses_malformed_requests(cast):
    a = write("alice", 0)
    for kwargs, message in (
        ({"member_ids": []}, "at least one member"),
        ({"member_ids": [a, a]}, "listed twice"),
        ({"member_ids": [a], "name": " "}, "needs a name"),
        ({"member_ids": [a], "rollup_id": a}, "cannot absorb itself"),
    ):
        call = {"name": "n", "body": "b", "expected_generation": generation_of("alice"), **kwargs}
        with pytest.raises(AbstractError, match=message):
            abstract("alice", **call)
    with pytest.raises(NotFound, match="not an entity"):
        abstract("ghost", [a], name="n", body="b", expected_generation=0)


def test_abstract_fault_between_writes_lands_nothing(cast, monkeypatch):
    a, b = write("alice", 0), write("alice", 1)
    generation = generation_of("alice")

    def fail(*args, **kwargs):
        raise RuntimeError("disk on fire")

    # The rollup and the abstracted_into marks are written before the edges.
    monkeypatch.setattr(abstract_module, "_write_edges", fail)
    with pytest.raises(RuntimeError, match="disk on fire"):
        abstract("alice", [a, b], name="n", body="b", expected_generation=generation)
    assert landed() == ([], [], [])
    assert generation_of("alice") == generation
    monkeypatch.undo()
    abstract("alice", [a, b], name="n", body="b", expected_generation=generation, rollup_id="R1")
    assert len(landed()[2]) == 2


def test_a_reload_that_adds_memories_moves_the_generation_and_refuses_a_stale_pin(activate_save):
    import json as _json

    from memory.worlds.demo import DEMO_PATH
    from memory.worlds.scenario import load_world

    doc = _json.loads(DEMO_PATH.read_text())
    activate_save(load_world(doc).save)
    pinned = generation_of("npc-pip")
    member = BufferEntry.objects.filter(owner_id="npc-pip").values_list("id", flat=True).first()
    load_world(doc)  # the same file again: nothing new, nothing moves
    assert generation_of("npc-pip") == pinned
    pip = next(e for e in doc["entities"] if e["id"] == "npc-pip")
    pip.setdefault("initialMemories", []).append(
        {
            "id": "pip-new",
            "timestamp": "2027-01-01T00:00:00.000Z",
            "locationId": pip.get("locationId"),
            "intent": {
                "type": "action",
                "originalText": "counts coins",
                "description": "counts coins",
                "actorId": "npc-pip",
                "targetIds": [],
            },
            "outcome": None,
        }
    )
    # Another file for the same save: swapped in, a new save under the old name.
    activate_save(load_world(doc, replace=True).save)
    assert generation_of("npc-pip") == pinned + 1
    with pytest.raises(AbstractConflict, match="generation"):
        abstract("npc-pip", [member], name="n", body="b", expected_generation=pinned)
