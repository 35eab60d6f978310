from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memory.engine.longterm.faces import (
    FaceRow,
    Faces,
    FacesError,
    IndexRow,
    compute_faces,
    get_by_id,
    index_rows,
    listing,
    resolve_bare_slug,
    search,
)
from memory.engine.longterm.shadowing import EntryHeader, shadow_key_of

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
NAMES = ["dragons", "Dragons", "tavern", "ale"]


def _all_deliverable(_: str) -> str | None:
    return None


def _faces(
    headers: list[EntryHeader],
    write_scope: str | None = HOME,
    layer_order: list[str] | None = None,
    edges: list[tuple[str, str]] | None = None,
    withheld: set[str] | None = None,
    undeliverable: dict[str, str] | None = None,
) -> Faces:
    undeliverable = undeliverable or {}
    return compute_faces(
        headers,
        write_scope,
        [LORE, CANON] if layer_order is None else layer_order,
        edges or [],
        withheld or set(),
        undeliverable.get,
    )


@dataclass(frozen=True)
class Layering:
    headers: list[EntryHeader]
    write_scope: str | None
    layer_order: list[str]
    edges: list[tuple[str, str]]
    withheld: set[str]
    undeliverable: dict[str, str]

    def faces(self) -> Faces:
        return compute_faces(
            self.headers,
            self.write_scope,
            self.layer_order,
            self.edges,
            self.withheld,
            self.undeliverable.get,
        )


@st.composite
def layerings(draw: st.DrawFn) -> Layering:
    write_scope = draw(st.none() | st.just(HOME))
    layer_order = draw(st.permutations([LORE, CANON, "layer:rumour"]))
    scopes = ([HOME] if write_scope else []) + list(layer_order)
    ids = draw(
        st.lists(st.sampled_from([f"e{n:02d}" for n in range(40)]), unique=True, max_size=25)
    )
    headers = [
        EntryHeader(
            id=i,
            scope=draw(st.sampled_from(scopes)),
            slug=draw(st.sampled_from(["dragons", "notes/dragons", "notes/tavern", "ale", "misc"])),
            name=draw(st.none() | st.sampled_from(NAMES)),
            draft_name=draw(st.none() | st.sampled_from(NAMES)),
        )
        for i in ids
    ]
    members = draw(st.sets(st.sampled_from(ids))) if ids else set()
    rollups = ids + ["r-outside"]
    edges = [(m, draw(st.sampled_from(rollups))) for m in sorted(members)]
    withheld = draw(st.sets(st.sampled_from(ids))) if ids else set()
    undeliverable_ids = draw(st.sets(st.sampled_from(ids))) if ids else set()
    return Layering(
        headers=headers,
        write_scope=write_scope,
        layer_order=list(layer_order),
        edges=edges,
        withheld=withheld,
        undeliverable=dict.fromkeys(undeliverable_ids, "bad intent_json"),
    )


# --- the seed's counterexample --------------------------------------------------------------


def test_shadowing_consolidated_home_entry_does_not_shadow_layer_entry() -> None:
    headers = [
        EntryHeader("h1", HOME, "notes/dragons", None),
        EntryHeader("h9", HOME, "rollups/what-i-know", "What I know"),
        EntryHeader("l1", LORE, "dragons", None),
    ]
    faces = _faces(headers, edges=[("h1", "h9")])
    assert faces.shadowed == {}
    assert faces.superseded == {"h1": "h9"}
    assert faces.default == ["h9", "l1"]
    assert [r.line for r in index_rows(faces, headers)] == ["- What I know", "- dragons"]
    assert resolve_bare_slug(faces, headers, "dragons") == "l1"
    assert [r.id for r in search(faces, headers, {}, "dragons")] == ["l1"]
    assert get_by_id(faces, "h1") == (
        "h1",
        ["[superseded] consolidated into h9; delivered by id as evidence"],
    )


def test_shadowing_live_home_entry_shadows_layer_entry() -> None:
    headers = [
        EntryHeader("h1", HOME, "notes/dragons", None),
        EntryHeader("l1", LORE, "dragons", None),
    ]
    faces = _faces(headers)
    assert faces.shadowed == {"l1": "h1"}
    assert faces.default == ["h1"]


@pytest.mark.parametrize(
    "off",
    [
        {"withheld": {"h1"}},
        {"edges": [("h1", "r-outside")]},
        {"undeliverable": {"h1": "bad intent_json"}},
    ],
    ids=["withheld", "superseded", "undeliverable"],
)
def test_faces_carrier_off_the_default_face_shadows_nothing(off: dict) -> None:
    headers = [
        EntryHeader("h1", HOME, "notes/dragons", None),
        EntryHeader("l1", LORE, "dragons", None),
    ]
    faces = _faces(headers, **off)
    assert faces.shadowed == {}
    assert faces.default == ["l1"]


def test_faces_next_home_carrier_takes_over_when_lowest_is_off() -> None:
    headers = [
        EntryHeader("h1", HOME, "a/dragons", None),
        EntryHeader("h2", HOME, "b", "dragons"),
        EntryHeader("l1", LORE, "dragons", None),
    ]
    assert _faces(headers).shadowed == {"l1": "h1"}
    assert _faces(headers, withheld={"h1"}).shadowed == {"l1": "h2"}


def test_faces_draft_name_shadows_nothing() -> None:
    headers = [
        EntryHeader("h1", HOME, "notes/wip", None, draft_name="dragons"),
        EntryHeader("l1", LORE, "dragons", None),
    ]
    faces = _faces(headers)
    assert faces.shadowed == {}
    assert faces.default == ["h1", "l1"]


# --- reading order ----------------------------------------------------------------------------


def test_faces_reading_order_home_then_layers_in_subscription_order_then_id() -> None:
    headers = [
        EntryHeader("a2", CANON, "x", None),
        EntryHeader("b1", LORE, "y", None),
        EntryHeader("a1", CANON, "z", None),
        EntryHeader("c2", HOME, "w", None),
        EntryHeader("c1", HOME, "v", None),
    ]
    assert _faces(headers, layer_order=[CANON, LORE]).default == ["c1", "c2", "a1", "a2", "b1"]
    assert _faces(headers, layer_order=[LORE, CANON]).default == ["c1", "c2", "b1", "a1", "a2"]


def test_faces_no_write_home_has_no_shadows() -> None:
    headers = [EntryHeader("l1", LORE, "dragons", None), EntryHeader("c1", CANON, "dragons", None)]
    faces = _faces(headers, write_scope=None)
    assert faces.shadowed == {}
    assert faces.default == ["l1", "c1"]


def test_faces_rejects_a_scope_the_session_does_not_read() -> None:
    with pytest.raises(FacesError, match="'layer:secret'"):
        _faces([EntryHeader("x1", "layer:secret", "dragons", None)])


def test_faces_rejects_duplicate_ids() -> None:
    with pytest.raises(FacesError, match="duplicate entry id 'x1'"):
        _faces([EntryHeader("x1", HOME, "a", None), EntryHeader("x1", LORE, "b", None)])


def test_faces_ignores_edges_and_withheld_ids_outside_the_headers() -> None:
    faces = _faces([EntryHeader("h1", HOME, "a", None)], edges=[("buf-1", "h1")], withheld={"zz"})
    assert faces.superseded == {}
    assert faces.withheld == set()
    assert faces.default == ["h1"]


# --- the four seats and get-by-id -------------------------------------------------------------

SEATS_HEADERS = [
    EntryHeader("h1", HOME, "notes/dragons", None),
    EntryHeader("h2", HOME, "notes/old-ale", "ale"),
    EntryHeader("h3", HOME, "rollups/summer", "Summer"),
    EntryHeader("h4", HOME, "notes/secret", None),
    EntryHeader("l1", LORE, "dragons", None),
    EntryHeader("l2", LORE, "tavern", "The Tavern"),
    EntryHeader("c1", CANON, "ale", None),
    EntryHeader("c2", CANON, "broken", None),
]
SEATS_BODIES = {
    "h1": "Wyrms nest in the north.",
    "h2": "The ale is sour.",
    "h3": "A summer of trouble.",
    "h4": "Nobody knows.",
    "l1": "Dragons hoard GOLD.",
    "l2": "Charlie pours the ale.",
    "c1": "Ale is brewed from barley.",
    "c2": "gold",
}


def _seats_faces() -> Faces:
    # h2 is absorbed into h3 and so cannot shadow c1; c1 is itself absorbed too.
    return _faces(
        SEATS_HEADERS,
        edges=[("h2", "h3"), ("c1", "h3")],
        withheld={"h4"},
        undeliverable={"c2": "bad intent_json"},
    )


def test_faces_seats_example_sets() -> None:
    faces = _seats_faces()
    assert faces.default == ["h1", "h3", "l2"]
    assert faces.shadowed == {"l1": "h1"}
    assert faces.superseded == {"h2": "h3", "c1": "h3"}
    assert faces.withheld == {"h4"}
    assert faces.undeliverable == {"c2": "bad intent_json"}


def test_index_rows_default_face() -> None:
    assert index_rows(_seats_faces(), SEATS_HEADERS) == [
        IndexRow("h1", "dragons"),
        IndexRow("h3", "Summer"),
        IndexRow("l2", "The Tavern"),
    ]


def test_index_rows_include_shadowed_tags_and_lines() -> None:
    rows = index_rows(_seats_faces(), SEATS_HEADERS, include_shadowed=True)
    assert [r.line for r in rows] == [
        "- dragons",
        "- ale [superseded]",
        "- Summer",
        "- dragons [shadowed]",
        "- The Tavern",
        "- ale [superseded]",
    ]


def test_index_rows_shadowed_and_superseded_shows_both_tags() -> None:
    headers = [
        EntryHeader("h1", HOME, "dragons", None),
        EntryHeader("l1", LORE, "dragons", None),
        EntryHeader("l9", LORE, "rollup", None),
    ]
    faces = _faces(headers, edges=[("l1", "l9")])
    assert index_rows(faces, headers, include_shadowed=True) == [
        IndexRow("h1", "dragons"),
        IndexRow("l1", "dragons", ("[shadowed]", "[superseded]")),
        IndexRow("l9", "rollup"),
    ]
    assert get_by_id(faces, "l1") == (
        "l1",
        [
            SHADOWED_BY_H1,
            "[superseded] consolidated into l9; delivered by id as evidence",
        ],
    )


def test_listing_default_face() -> None:
    assert listing(_seats_faces(), SEATS_HEADERS) == [
        FaceRow("h1", HOME, "notes/dragons", "dragons"),
        FaceRow("h3", HOME, "rollups/summer", "Summer"),
        FaceRow("l2", LORE, "tavern", "The Tavern"),
    ]


def test_listing_include_shadowed_leaves_withheld_and_undeliverable_off() -> None:
    assert [
        (r.id, r.tags) for r in listing(_seats_faces(), SEATS_HEADERS, include_shadowed=True)
    ] == [
        ("h1", ()),
        ("h2", ("[superseded]",)),
        ("h3", ()),
        ("l1", ("[shadowed]",)),
        ("l2", ()),
        ("c1", ("[superseded]",)),
    ]


def test_search_matches_name_slug_body_case_insensitively() -> None:
    faces = _seats_faces()
    assert [r.id for r in search(faces, SEATS_HEADERS, SEATS_BODIES, "ALE")] == ["l2"]
    assert [r.id for r in search(faces, SEATS_HEADERS, SEATS_BODIES, "notes/")] == ["h1"]
    assert [r.id for r in search(faces, SEATS_HEADERS, SEATS_BODIES, "the tavern")] == ["l2"]


def test_search_include_shadowed_tags_hits() -> None:
    hits = search(_seats_faces(), SEATS_HEADERS, SEATS_BODIES, "gold", include_shadowed=True)
    assert hits == [FaceRow("l1", LORE, "dragons", "dragons", ("[shadowed]",))]
    assert search(_seats_faces(), SEATS_HEADERS, SEATS_BODIES, "gold") == []


def test_search_does_not_read_draft_names() -> None:
    headers = [EntryHeader("h1", HOME, "notes/wip", None, draft_name="Wyrms")]
    assert search(_faces(headers), headers, {}, "wyrms") == []


def test_resolve_bare_slug_home_first_then_layer_order() -> None:
    headers = [
        EntryHeader("h1", HOME, "ale", None),
        EntryHeader("l1", LORE, "ale", None),
        EntryHeader("c1", CANON, "ale", "Ale"),
    ]
    assert resolve_bare_slug(_faces(headers), headers, "ale") == "h1"
    assert resolve_bare_slug(_faces(headers, withheld={"h1"}), headers, "ale") == "l1"
    assert (
        resolve_bare_slug(
            _faces(headers, withheld={"h1"}, layer_order=[CANON, LORE]), headers, "ale"
        )
        == "c1"
    )


def test_resolve_bare_slug_skips_shadowed_unless_asked() -> None:
    faces = _seats_faces()
    assert resolve_bare_slug(faces, SEATS_HEADERS, "dragons") is None
    assert resolve_bare_slug(faces, SEATS_HEADERS, "dragons", include_shadowed=True) == "l1"
    assert resolve_bare_slug(faces, SEATS_HEADERS, "notes/dragons") == "h1"


def test_resolve_bare_slug_never_answers_withheld_or_undeliverable() -> None:
    faces = _seats_faces()
    assert resolve_bare_slug(faces, SEATS_HEADERS, "notes/secret", include_shadowed=True) is None
    assert resolve_bare_slug(faces, SEATS_HEADERS, "broken", include_shadowed=True) is None
    assert resolve_bare_slug(faces, SEATS_HEADERS, "nowhere") is None


def test_get_by_id_default_entry_has_no_notes() -> None:
    assert get_by_id(_seats_faces(), "h1") == ("h1", [])


def test_get_by_id_shadowed_entry_names_its_shadow() -> None:
    assert get_by_id(_seats_faces(), "l1") == (
        "l1",
        [SHADOWED_BY_H1],
    )


def test_get_by_id_withheld_and_undeliverable_notes() -> None:
    faces = _seats_faces()
    assert get_by_id(faces, "h4") == (
        "h4",
        ["[withheld] retracted or flagged; delivered by id as evidence"],
    )
    assert get_by_id(faces, "c2") == (
        "c2",
        ["[undeliverable] the body cannot be rendered: bad intent_json"],
    )


def test_get_by_id_unknown_id_raises() -> None:
    with pytest.raises(KeyError):
        get_by_id(_seats_faces(), "nope")


# --- properties over random layerings -------------------------------------------------------


@PROPERTY
@given(layerings())
def test_faces_home_entries_are_never_shadowed(layering: Layering) -> None:
    scope_of = {h.id: h.scope for h in layering.headers}
    assert {scope_of[i] for i in layering.faces().shadowed} <= set(layering.layer_order)


@PROPERTY
@given(layerings())
def test_faces_layers_never_shadow_each_other(layering: Layering) -> None:
    scope_of = {h.id: h.scope for h in layering.headers}
    assert {scope_of[c] for c in layering.faces().shadowed.values()} <= {HOME}


@PROPERTY
@given(layerings())
def test_faces_no_write_home_no_shadows(layering: Layering) -> None:
    faces = compute_faces(
        [h for h in layering.headers if h.scope != HOME],
        None,
        layering.layer_order,
        layering.edges,
        layering.withheld,
        layering.undeliverable.get,
    )
    assert faces.shadowed == {}


@PROPERTY
@given(layerings())
def test_faces_lowest_standing_home_id_wins(layering: Layering) -> None:
    faces = layering.faces()
    by_id = {h.id: h for h in layering.headers}
    standing = set(faces.default)
    for entry_id, carrier in faces.shadowed.items():
        key = shadow_key_of(by_id[entry_id])
        assert carrier == min(
            h.id
            for h in layering.headers
            if h.scope == HOME and h.id in standing and shadow_key_of(h) == key
        )


@PROPERTY
@given(layerings())
def test_faces_off_face_carriers_shadow_nothing(layering: Layering) -> None:
    faces = layering.faces()
    carriers = set(faces.shadowed.values())
    assert carriers & (faces.withheld | set(faces.superseded) | set(faces.undeliverable)) == set()


@PROPERTY
@given(layerings())
def test_faces_home_answer_and_shadowed_answer_never_vanish_together(layering: Layering) -> None:
    faces = layering.faces()
    by_id = {h.id: h for h in layering.headers}
    default = set(faces.default)
    home_names_on_face = {shadow_key_of(by_id[i]) for i in default if by_id[i].scope == HOME}
    for entry_id, carrier in faces.shadowed.items():
        assert carrier in default
        assert shadow_key_of(by_id[entry_id]) in home_names_on_face


@PROPERTY
@given(layerings())
def test_faces_default_face_is_everything_not_taken_off(layering: Layering) -> None:
    faces = layering.faces()
    off = faces.withheld | set(faces.superseded) | set(faces.undeliverable) | set(faces.shadowed)
    assert set(faces.default) == {h.id for h in layering.headers} - off
    assert len(faces.default) == len(set(faces.default))
    assert list(faces.scopes) == [
        h.id
        for h in sorted(
            layering.headers,
            key=lambda h: (
                (([HOME] if layering.write_scope else []) + layering.layer_order).index(h.scope),
                h.id,
            ),
        )
    ]


@PROPERTY
@given(layerings())
def test_faces_include_shadowed_shows_every_readable_entry_exactly_once(layering: Layering) -> None:
    faces = layering.faces()
    readable = {h.id for h in layering.headers} - faces.withheld - set(faces.undeliverable)
    for rows in (
        index_rows(faces, layering.headers, include_shadowed=True),
        listing(faces, layering.headers, include_shadowed=True),
        search(faces, layering.headers, {}, "", include_shadowed=True),
    ):
        counts = Counter(r.id for r in rows)
        assert set(counts) == readable
        assert set(counts.values()) <= {1}
        for r in rows:
            expected = tuple(
                tag
                for tag, on in (
                    ("[shadowed]", r.id in faces.shadowed),
                    ("[superseded]", r.id in faces.superseded),
                )
                if on
            )
            assert r.tags == expected


@PROPERTY
@given(layerings())
def test_faces_default_seats_show_exactly_the_default_face(layering: Layering) -> None:
    faces = layering.faces()
    assert [r.id for r in index_rows(faces, layering.headers)] == faces.default
    assert [r.id for r in listing(faces, layering.headers)] == faces.default
    assert [r.id for r in search(faces, layering.headers, {}, "")] == faces.default
    assert {r.tags for r in listing(faces, layering.headers)} <= {()}


@PROPERTY
@given(layerings())
def test_faces_bare_slug_resolves_to_first_on_face(layering: Layering) -> None:
    faces = layering.faces()
    by_id = {h.id: h for h in layering.headers}
    for slug in {h.slug for h in layering.headers}:
        on_face = [i for i in faces.default if by_id[i].slug == slug]
        assert resolve_bare_slug(faces, layering.headers, slug) == (on_face[0] if on_face else None)


@PROPERTY
@given(layerings())
def test_faces_get_by_id_always_delivers(layering: Layering) -> None:
    faces = layering.faces()
    for h in layering.headers:
        entry_id, notes = get_by_id(faces, h.id)
        assert entry_id == h.id
        expected = (
            (h.id in faces.shadowed)
            + (h.id in faces.superseded)
            + (h.id in faces.withheld)
            + (h.id in faces.undeliverable)
        )
        assert len(notes) == expected
