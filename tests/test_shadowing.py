from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memory.engine.longterm.shadowing import (
    MEMORY_SEARCH_SHADOWED_TAG,
    MEMORY_SEARCH_SUPERSEDED_TAG,
    EntryHeader,
    derive_shadowed_set,
    derive_superseded_set,
    memory_shadowed_note,
    memory_superseded_note,
    shadow_key_of,
    shadow_names_of,
)

# The same on every backend: CI runs it on SQLite only (see the markers in pyproject.toml).
pytestmark = pytest.mark.pure

# No deadline: timings belong in bench/, never in assertions (and CI machines are noisy).
PROPERTY = settings(deadline=None)

HOME = "home:alice"
SHADOWED_BY_H1 = (
    "[shadowed] the write home's entry h1 carries this entry's name; delivered by id as evidence"
)
LORE = "layer:lore"
CANON = "layer:canon"
SCOPES = [HOME, LORE, CANON]
NAMES = ["dragons", "Dragons", "tavern", "ale"]


@st.composite
def layerings(draw: st.DrawFn) -> tuple[list[EntryHeader], str | None, set[str]]:
    ids = draw(
        st.lists(st.sampled_from([f"e{n:02d}" for n in range(30)]), unique=True, max_size=20)
    )
    headers = [
        EntryHeader(
            id=i,
            scope=draw(st.sampled_from(SCOPES)),
            slug=draw(st.sampled_from(["dragons", "notes/dragons", "notes/tavern", "ale", "misc"])),
            name=draw(st.none() | st.sampled_from(NAMES)),
            draft_name=draw(st.none() | st.sampled_from(NAMES)),
        )
        for i in ids
    ]
    write_scope = draw(st.none() | st.sampled_from(SCOPES))
    excluded = draw(st.sets(st.sampled_from(ids))) if ids else set()
    return headers, write_scope, excluded


def _oracle(
    headers: list[EntryHeader], write_scope: str | None, excluded: set[str]
) -> dict[str, str]:
    # Quadratic on purpose: the rule stated as plainly as it reads.
    if write_scope is None:
        return {}
    result = {}
    for h in headers:
        if h.scope == write_scope:
            continue
        carriers = [
            c.id
            for c in headers
            if c.scope == write_scope
            and c.id not in excluded
            and shadow_key_of(c) == shadow_key_of(h)
        ]
        if carriers:
            result[h.id] = min(carriers)
    return result


def test_shadow_key_of_prefers_committed_name() -> None:
    assert shadow_key_of(EntryHeader("e1", HOME, "notes/dragons", "Wyrms")) == "Wyrms"


def test_shadow_key_of_falls_back_to_last_slug_segment() -> None:
    assert shadow_key_of(EntryHeader("e1", HOME, "notes/lore/dragons", None)) == "dragons"
    assert shadow_key_of(EntryHeader("e1", HOME, "dragons", None)) == "dragons"


def test_shadow_key_of_ignores_draft_name() -> None:
    assert (
        shadow_key_of(EntryHeader("e1", HOME, "notes/dragons", None, draft_name="Wyrms"))
        == "dragons"
    )


def test_shadow_key_of_an_empty_committed_name_falls_back_to_the_slug() -> None:
    # Issue 13.7: an empty committed name is no name, as a missing one (was: kept as "").
    assert shadow_key_of(EntryHeader("e1", HOME, "notes/dragons", "")) == "dragons"


def test_shadow_names_of_lowest_id_wins() -> None:
    headers = [
        EntryHeader("e3", HOME, "a/dragons", None),
        EntryHeader("e1", HOME, "b/dragons", None),
        EntryHeader("e2", HOME, "c", "dragons"),
        EntryHeader("e0", LORE, "dragons", None),
    ]
    assert shadow_names_of(headers, HOME) == {"dragons": "e1"}


def test_shadow_names_of_skips_excluded_carriers() -> None:
    headers = [EntryHeader("e1", HOME, "dragons", None), EntryHeader("e2", HOME, "x", "dragons")]
    assert shadow_names_of(headers, HOME, excluded=lambda i: i == "e1") == {"dragons": "e2"}


def test_shadow_names_of_no_write_home_carries_nothing() -> None:
    assert shadow_names_of([EntryHeader("e1", HOME, "dragons", None)], None) == {}


def test_derive_shadowed_set_layer_entry_leaves_for_home_name() -> None:
    headers = [
        EntryHeader("h1", HOME, "dragons", None),
        EntryHeader("l1", LORE, "lore/dragons", None),
        EntryHeader("c1", CANON, "x", "dragons"),
        EntryHeader("c2", CANON, "tavern", None),
    ]
    assert derive_shadowed_set(headers, HOME) == {"l1": "h1", "c1": "h1"}


def test_derive_shadowed_set_is_case_sensitive() -> None:
    headers = [EntryHeader("h1", HOME, "dragons", None), EntryHeader("l1", LORE, "Dragons", None)]
    assert derive_shadowed_set(headers, HOME) == {}


def test_derive_shadowed_set_layers_never_shadow_each_other() -> None:
    headers = [EntryHeader("l1", LORE, "dragons", None), EntryHeader("c1", CANON, "dragons", None)]
    assert derive_shadowed_set(headers, HOME) == {}


def test_derive_shadowed_set_draft_name_shadows_nothing() -> None:
    headers = [
        EntryHeader("h1", HOME, "notes/wip", None, draft_name="dragons"),
        EntryHeader("l1", LORE, "dragons", None),
    ]
    assert derive_shadowed_set(headers, HOME) == {}


def test_derive_shadowed_set_draft_name_of_layer_entry_is_not_its_key() -> None:
    headers = [
        EntryHeader("h1", HOME, "dragons", None),
        EntryHeader("l1", LORE, "wyrms", None, draft_name="dragons"),
    ]
    assert derive_shadowed_set(headers, HOME) == {}


def test_derive_shadowed_set_excluded_carrier_shadows_nothing() -> None:
    headers = [EntryHeader("h1", HOME, "dragons", None), EntryHeader("l1", LORE, "dragons", None)]
    assert derive_shadowed_set(headers, HOME, excluded=lambda i: i == "h1") == {}


def test_derive_shadowed_set_uses_given_names_as_is() -> None:
    headers = [EntryHeader("h1", HOME, "dragons", None), EntryHeader("l1", LORE, "tavern", None)]
    assert derive_shadowed_set(headers, HOME, shadow_names={"tavern": "elsewhere"}) == {
        "l1": "elsewhere"
    }


def test_derive_shadowed_set_no_write_home_is_empty_even_with_names() -> None:
    headers = [EntryHeader("l1", LORE, "dragons", None)]
    assert derive_shadowed_set(headers, None, shadow_names={"dragons": "h1"}) == {}


def test_derive_shadowed_set_accepts_a_one_shot_iterable() -> None:
    headers = [EntryHeader("h1", HOME, "dragons", None), EntryHeader("l1", LORE, "dragons", None)]
    assert derive_shadowed_set(iter(headers), HOME) == {"l1": "h1"}


def test_derive_superseded_set_maps_member_to_rollup() -> None:
    assert derive_superseded_set([("m1", "r1"), ("m2", "r1"), ("r1", "r2")]) == {
        "m1": "r1",
        "m2": "r1",
        "r1": "r2",
    }


def test_derive_superseded_set_lowest_rollup_answers_a_doubled_member() -> None:
    assert derive_superseded_set([("m1", "r2"), ("m1", "r1")]) == {"m1": "r1"}


def test_derive_superseded_set_empty() -> None:
    assert derive_superseded_set([]) == {}


def test_memory_shadowed_note_names_the_shadowing_entry() -> None:
    assert memory_shadowed_note("h1") == SHADOWED_BY_H1


def test_memory_superseded_note_names_the_rollup() -> None:
    assert (
        memory_superseded_note("r1")
        == "[superseded] consolidated into r1; delivered by id as evidence"
    )


def test_shadowing_tags_exact() -> None:
    assert MEMORY_SEARCH_SHADOWED_TAG == "[shadowed]"
    assert MEMORY_SEARCH_SUPERSEDED_TAG == "[superseded]"


# --- properties over random layerings -------------------------------------------------------


@PROPERTY
@given(layerings())
def test_derive_shadowed_set_matches_the_plain_rule(case) -> None:
    headers, write_scope, excluded = case
    assert derive_shadowed_set(headers, write_scope, excluded=excluded.__contains__) == _oracle(
        headers, write_scope, excluded
    )


@PROPERTY
@given(layerings())
def test_derive_shadowed_set_never_shadows_home_entries(case) -> None:
    headers, write_scope, excluded = case
    scope_of = {h.id: h.scope for h in headers}
    shadowed = derive_shadowed_set(headers, write_scope, excluded=excluded.__contains__)
    assert {i for i in shadowed if scope_of[i] == write_scope} == set()


@PROPERTY
@given(layerings())
def test_derive_shadowed_set_only_home_carriers_shadow(case) -> None:
    headers, write_scope, excluded = case
    by_id = {h.id: h for h in headers}
    shadowed = derive_shadowed_set(headers, write_scope, excluded=excluded.__contains__)
    for entry_id, carrier in shadowed.items():
        assert by_id[carrier].scope == write_scope
        assert carrier not in excluded
        assert shadow_key_of(by_id[carrier]) == shadow_key_of(by_id[entry_id])


@PROPERTY
@given(layerings())
def test_derive_shadowed_set_no_write_home_is_empty(case) -> None:
    headers, _, excluded = case
    assert derive_shadowed_set(headers, None, excluded=excluded.__contains__) == {}


@PROPERTY
@given(layerings())
def test_derive_shadowed_set_lowest_id_wins(case) -> None:
    headers, write_scope, excluded = case
    shadowed = derive_shadowed_set(headers, write_scope, excluded=excluded.__contains__)
    for entry_id, carrier in shadowed.items():
        key = shadow_key_of(next(h for h in headers if h.id == entry_id))
        rivals = [
            h.id
            for h in headers
            if h.scope == write_scope and h.id not in excluded and shadow_key_of(h) == key
        ]
        assert carrier == min(rivals)


@PROPERTY
@given(layerings(), st.lists(st.none() | st.sampled_from(NAMES), min_size=20, max_size=20))
def test_derive_shadowed_set_ignores_every_draft_name(case, drafts) -> None:
    headers, write_scope, excluded = case
    redrafted = [
        EntryHeader(h.id, h.scope, h.slug, h.name, draft)
        for h, draft in zip(headers, drafts, strict=False)
    ]
    assert derive_shadowed_set(
        redrafted, write_scope, excluded=excluded.__contains__
    ) == derive_shadowed_set(headers, write_scope, excluded=excluded.__contains__)


@PROPERTY
@given(layerings())
def test_derive_shadowed_set_is_independent_of_scan_order(case) -> None:
    headers, write_scope, excluded = case
    assert derive_shadowed_set(
        list(reversed(headers)), write_scope, excluded=excluded.__contains__
    ) == (derive_shadowed_set(headers, write_scope, excluded=excluded.__contains__))
