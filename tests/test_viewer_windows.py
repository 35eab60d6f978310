"""The viewer page's windows (the switcher, the alias table) read only what they show, and
show exactly what reading the whole world and slicing it showed."""

from __future__ import annotations

import json
import random

import pytest

from memory.engine.aliases import KnownIds, derive_descriptor, descriptor_words
from memory.engine.knowledge import FOLDS_TO_WORD, get_viewer, known_ids_among, world_knowledge
from memory.models import Attribute, WorldObject
from memory.web.selectors.viewers import (
    alias_rows,
    alias_targets,
    alias_window,
    viewer_ids,
    viewer_window_ids,
)

WORD_CHARS = set("abcdefghijklmnopqrstuvwxyz'-")


def test_folds_to_word_is_every_non_ascii_character_that_casefolds_to_word_characters() -> None:
    found = [
        c
        for c in map(chr, range(0x80, 0x110000))
        if c.casefold() and set(c.casefold()) <= WORD_CHARS
    ]
    assert "".join(found) == FOLDS_TO_WORD


def test_descriptor_words_cover_every_id_the_descriptor_looks_up() -> None:
    # The head of a gendered stranger is no word of its attributes: it is looked up too.
    attrs = {"gender": "male", "appearance": "a Tall sailor"}
    assert {"man", "figure", "a", "tall", "sailor", "male"} <= descriptor_words(attrs)
    assert derive_descriptor({"gender": "male"}, KnownIds.of(["man"])) == "an unfamiliar figure"
    assert derive_descriptor({"gender": "male"}, KnownIds()) == "the man"


@pytest.mark.django_db
def test_known_ids_among_matches_a_casefold_of_every_id(django_assert_num_queries) -> None:
    WorldObject.objects.create(id="w", type="world")
    WorldObject.objects.create(id="w2", type="world")
    for i in [
        "Sailor",
        "STRASSE",
        "Stra\u00dfe",
        "\u212aelp",
        "ro\ufb05",
        "cloak",
        "d\u00e9j\u00e0",
    ]:
        WorldObject.objects.create(id=i, type="entity", world_id="w")
    WorldObject.objects.create(id="hood", type="entity", world_id="w2")
    words = {"sailor", "strasse", "kelp", "rost", "cloak", "hood", "man"}
    with django_assert_num_queries(1):
        known = known_ids_among("w", words)
    assert known == {"sailor", "strasse", "kelp", "rost", "cloak"}  # hood: another world's
    assert known_ids_among(None, words) == known | {"hood"}
    # Past KNOWN_WORDS_MAX words, every id is read: the same answer.
    many = words | {f"z{'x' * n}" for n in range(600)}
    assert known_ids_among("w", many) == known
    with django_assert_num_queries(0):
        assert known_ids_among("w", []) == set()


def _old_alias_rows(viewer, *, pinned, show_all, limit, strangers):
    """The alias table as the page built it before: the whole world read, then sliced."""
    knowledge = world_knowledge(viewer.obj.world_id)
    targets = alias_targets(viewer, knowledge)
    if not show_all and len(targets) > limit:
        keep = [t for t in targets if t in viewer.aliases or t in pinned]
        picked = set(keep)
        rest = [t for t in targets if t not in picked]
        picked |= set(rest[: max(min(limit - len(keep), strangers), 0)])
        targets = [t for t in targets if t in picked]
    return alias_rows(viewer, knowledge, targets=targets), len(alias_targets(viewer, knowledge))


def _random_world(rng: random.Random, n: int) -> list[str]:
    WorldObject.objects.create(id="w", type="world")
    WorldObject.objects.create(id="elsewhere", type="world")
    WorldObject.objects.create(id="Tavern", type="location", world_id="w")
    WorldObject.objects.create(id="stranger", type="entity", world_id="elsewhere")
    words = ["sailor", "Hood", "cloak", "man", "Tall", "stra\u00dfe", "bosun", "figure"]
    ids = []
    for i in range(n):
        ids.append(rng.choice([f"npc-{i:02d}", f"{rng.choice(words)}{i}", rng.choice(words)]))
    ids = list(dict.fromkeys(ids))
    for i in ids:
        WorldObject.objects.create(
            id=i,
            type="entity",
            world_id="w",
            is_agent=rng.choice([None, 0, 1, 1]),
            aliases_json="[]",
        )
        for name in rng.sample(["appearance", "occupation", "gender", "name"], 2):
            value = " ".join(rng.choices([*words, "a", "dark", "hair", "male", "f"], k=4))
            Attribute.objects.create(
                object_id=i, name=name, value=value, visibility=rng.choice(["PUBLIC", "PRIVATE"])
            )
    return ids


@pytest.mark.django_db
@pytest.mark.parametrize("seed", range(12))
def test_alias_window_shows_what_reading_the_whole_world_showed(seed) -> None:
    rng = random.Random(seed)
    ids = _random_world(rng, rng.randrange(3, 30))
    viewer_id = rng.choice(ids)
    # Labels: entities of the world, its location (no target), ids of no world, another
    # world's entity, the viewer itself.
    pool = [*ids, "Tavern", "gone-1", "gone-2", "stranger", viewer_id]
    labels = [[t, f"label {n}"] for n, t in enumerate(rng.sample(pool, rng.randrange(0, 8)))]
    WorldObject.objects.filter(pk=viewer_id).update(aliases_json=json.dumps(labels))
    viewer = get_viewer(viewer_id)
    for limit, strangers, show_all in [
        (100, 10, False),
        (5, 2, False),
        (3, 0, False),
        (2, 1, True),
    ]:
        pinned = set(rng.sample(pool, 2))
        old, old_total = _old_alias_rows(
            viewer, pinned=pinned, show_all=show_all, limit=limit, strangers=strangers
        )
        window = alias_window(
            viewer, pinned=pinned, show_all=show_all, limit=limit, strangers=strangers
        )
        assert window.rows == old
        assert window.total == old_total


@pytest.mark.django_db
def test_alias_window_queries_do_not_grow_with_the_world(django_assert_max_num_queries) -> None:
    rng = random.Random(5)
    ids = _random_world(rng, 40)
    viewer = get_viewer(ids[0])
    # objects asked about, entity count, the window, attributes, ACL, known ids
    with django_assert_max_num_queries(6):
        alias_window(viewer, limit=10, strangers=3)
    for n in range(200):
        WorldObject.objects.create(id=f"more-{n:03d}", type="entity", world_id="w")
    with django_assert_max_num_queries(6):
        window = alias_window(viewer, limit=10, strangers=3)
    assert len(window.rows) == 3 and window.total == len(ids) - 1 + 200


@pytest.mark.django_db
@pytest.mark.parametrize("limit", [1, 2, 4, 50])
def test_viewer_window_ids_is_the_slice_of_every_viewer_id(
    limit, django_assert_num_queries
) -> None:
    rng = random.Random(limit)
    ids = _random_world(rng, 25)
    for viewer_id in ids:
        viewer = get_viewer(viewer_id)
        every = viewer_ids("w")
        at = every.index(viewer_id) if viewer_id in every else 0
        start = max(0, min(at - limit // 2, len(every) - limit))
        with django_assert_num_queries(2):
            assert viewer_window_ids(viewer, limit) == (every[start : start + limit], len(every))
