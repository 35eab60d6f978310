"""The leak scanner over the database: every fixture world's prompts, findings pinned exactly.

Every finding below was read against the prompt it came from (see the comments); the
offsets are into `PromptContext.text`, sections as `PromptContext.section_at` names them.
"""

from __future__ import annotations

import json
import string

import pytest
from django.db import transaction
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memory.active_save import use
from memory.engine.errors import NotFound
from memory.engine.knowledge import get_viewer
from memory.engine.leaks.scanner import Finding
from memory.engine.leaks.world_scan import (
    leak_counts,
    leak_world,
    scan_viewer,
    scan_world,
)
from memory.engine.prompt import prompt_context
from memory.models import Attribute, AttributeAcl, BufferEntry, Save, WorldObject
from memory.worlds.demo import load_demo
from memory.worlds.omnia_import import import_omnia
from memory.worlds.scenario import load_world
from tests.helpers import FIXTURES

V1 = FIXTURES / "omnia-74ffb45-tavern.sqlite"
GUARD = "68edd7b6-360d-46f8-a332-36a0baf598d3"
UPSTREAM_LINE = 'the hooded figure spoke to the bartender: "Bob greets Charlie"'
BOB_AS_ID = "system id of object 'bob'"


def spans(scan) -> list[tuple[str, str, int, int, str, int]]:
    """One row per distinct leak in a section: its first occurrence and how many there are."""
    return [
        (f.finding.kind, f.finding.text, f.finding.start, f.finding.end, f.section, f.count)
        for f in scan.findings
    ]


# --- the upstream leak ----------------------------------------------------------------------


@pytest.mark.django_db
def test_scan_viewer_catches_bob_in_alices_upstream_line_at_its_offsets(activate_save):
    activate_save(import_omnia(V1).save)
    scan = scan_viewer("alice")
    text = scan.prompt.text
    line_at = text.index(UPSTREAM_LINE)
    bob_at = line_at + UPSTREAM_LINE.index("Bob")
    assert (line_at, bob_at) == (530, 573)
    # bob's true name in this world is "Gareth" (true_name); "Bob" is his id in another case.
    # It stands twice in the section: one finding, both occurrences kept with their rows.
    first, second = scan.findings
    assert (first.viewer_id, first.section, first.finding) == (
        "alice",
        "Recent memories",
        Finding("system_id", 573, 576, "Bob", "bob", BOB_AS_ID),
    )
    assert first.occurrences == ((573, 576, "entry-1"), (625, 628, "entry-4"))
    assert (first.count, first.source_id, first.world_id) == (2, "entry-1", "tavern-world")
    assert first.context_before == '[12:00:00 PM] the hooded figure spoke to the bartender: "'
    assert first.context_after == ' greets Charlie"'
    assert (second.section, second.finding, second.occurrences) == (
        "Recent memories",
        Finding(
            "unknown_name",
            584,
            591,
            "Charlie",
            "charlie",
            "alice knows charlie only as 'the bartender'",
        ),
        ((584, 591, "entry-1"),),
    )
    assert text[573:576] == "Bob" and text[584:591] == "Charlie"


@pytest.mark.django_db
def test_scan_viewer_charlie_who_knows_bob_as_gareth_reads_the_same_line(activate_save):
    activate_save(import_omnia(V1).save)
    scan = scan_viewer("charlie")
    text = scan.prompt.text
    line = 'Gareth spoke to you: "Bob greets Charlie"'
    line_at = text.index(line)
    on_line = [f for f in scan.findings if line_at <= f.finding.start < line_at + len(line)]
    # "Charlie" is charlie's own name: never a finding. "Bob" is still bob's id.
    assert [(f.viewer_id, f.section, f.finding) for f in on_line] == [
        ("charlie", "Recent memories", Finding("system_id", 619, 622, "Bob", "bob", BOB_AS_ID))
    ]
    assert line_at + line.index("Bob") == 619


# --- every fixture world, every viewer, pinned ----------------------------------------------

RM = "Recent memories"

FIXTURE_FINDINGS = {
    "omnia-74ffb45-tavern.sqlite": {
        GUARD: [
            # "an unfamiliar figure Bob tries to slip past <guard uuid> toward the wine racks"
            ("system_id", "Bob", 694, 697, RM, 1),
            ("system_id", GUARD, 717, 753, RM, 1),
        ],
        "alice": [
            # "Bob greets Charlie", then "the hooded figure Bob attempts to break the lock"
            ("system_id", "Bob", 573, 576, RM, 2),
            ("unknown_name", "Charlie", 584, 591, RM, 1),
        ],
        "bob": [
            # bob's own id is still an id: a prompt never carries ids, its owner's included.
            ("system_id", "Bob", 505, 508, RM, 3),  # also at 543 and 1171
            ("unknown_name", "Charlie", 516, 523, RM, 1),  # bob has no alias for charlie
            ("system_id", GUARD, 1194, 1230, RM, 1),
        ],
        "charlie": [
            ("system_id", "Bob", 619, 622, RM, 2),  # also at 660
        ],
    },
    # Later omnia: the prompt holds omnia's own lines (issue 30), so the nested tag its
    # renderer leaves half-hydrated ("entity@entity@bob[bob][the hooded figure]") is a raw_tag
    # finding for each of its three readers; one stored monologue of bob's still says "Bob".
    # "cellar" (a location id that is a plain word) is ordinary, so "the cellar" is no finding.
    # ale-barrel is no agent (is_agent=0): no prompt of its own, so it is not scanned.
    "omnia-head-tavern.sqlite": {
        "97ef4a4a-a324-439f-be1d-a8da93557886": [],
        "alice": [("raw_tag", "entity@the hooded figure[the hooded figure]", 830, 873, RM, 1)],
        "bob": [
            ("system_id", "Bob", 652, 655, RM, 1),  # "Bob hides a pouch of coins ..."
            ("raw_tag", "entity@I[the hooded figure]", 969, 996, RM, 1),
        ],
        "charlie": [("raw_tag", "entity@Gareth[the hooded figure]", 820, 852, RM, 1)],
    },
    "omnia-head-tavern.scenario.json": {
        "97ef4a4a-a324-439f-be1d-a8da93557886": [],
        "alice": [],
        "bob": [("system_id", "Bob", 656, 659, RM, 1)],
        "charlie": [],
    },
    "omnia-scenario-talking-room-fadea41.json": {
        "7c9b83b3-8cfb-4e89-8d77-626a5757d591": [],
        "bf3f29d2-cf11-4b11-9a99-b13c126d400e": [],
    },
    "omnia-scenario-talking-room-c292626.json": {
        "7c9b83b3-8cfb-4e89-8d77-626a5757d591": [],
        "bf3f29d2-cf11-4b11-9a99-b13c126d400e": [],
    },
    # Exactly the three leaks memory/demo/README.md plants, and nothing else.
    "demo": {
        "5b0e6c1a-3f2d-4e8b-9a71-c4d2e8f90a13": [
            ("system_id", "npc-sable", 2201, 2210, RM, 1),  # m-c04-insp, read from the manifest
            (
                "private_attribute",
                "two short flashes and one long means the quay is clear",
                2308,
                2362,
                RM,
                1,
            ),
        ],
        "npc-maren": [],
        "npc-oswin": [("system_id", "npc-sable", 1778, 1787, RM, 1)],  # m-c04-oswin
        "npc-pip": [("unknown_name", "Sable Quint", 1967, 1978, RM, 1)],  # m-a06-pip
        "npc-sable": [],
        "npc-tobiah": [],
    },
}


def load_fixture(name: str) -> str:
    """The fixture world `name` loaded; returns its save's name."""
    if name == "demo":
        return load_demo().save
    if name.endswith(".sqlite"):
        return import_omnia(FIXTURES / name).save
    return load_world(FIXTURES / name).save


@pytest.mark.django_db
@pytest.mark.parametrize("name", list(FIXTURE_FINDINGS))
def test_scan_world_finds_exactly_the_pinned_leaks_in_every_fixture_world(name, activate_save):
    activate_save(load_fixture(name))
    scans = scan_world()
    assert {scan.viewer_id: spans(scan) for scan in scans} == FIXTURE_FINDINGS[name]
    for scan in scans:
        for f in scan.findings:
            assert scan.prompt.text[f.finding.start : f.finding.end] == f.finding.text


@pytest.mark.django_db
def test_scan_world_demo_reasons_and_entities(activate_save):
    activate_save(load_demo().save)
    found = [f.to_dict() for scan in scan_world("harbor-town") for f in scan.findings]
    assert [(d["viewer_id"], d["entity_id"], d["reason"]) for d in found] == [
        ("5b0e6c1a-3f2d-4e8b-9a71-c4d2e8f90a13", "npc-sable", "system id of object 'npc-sable'"),
        (
            "5b0e6c1a-3f2d-4e8b-9a71-c4d2e8f90a13",
            "npc-oswin",
            "private attribute 'signal_code' of npc-oswin; 5b0e6c1a-3f2d-4e8b-9a71-c4d2e8f90a13 has no access",
        ),
        ("npc-oswin", "npc-sable", "system id of object 'npc-sable'"),
        ("npc-pip", "npc-sable", "npc-pip knows npc-sable only as 'the tall one in grey'"),
    ]


@pytest.mark.django_db
def test_leak_counts_demo_every_viewer_every_kind(activate_save):
    activate_save(load_demo().save)
    zero = {
        "system_id": 0,
        "unknown_name": 0,
        "private_attribute": 0,
        "raw_tag": 0,
        "unresolved_tag": 0,
    }
    assert leak_counts("harbor-town") == {
        "5b0e6c1a-3f2d-4e8b-9a71-c4d2e8f90a13": {**zero, "system_id": 1, "private_attribute": 1},
        "npc-maren": zero,
        "npc-oswin": {**zero, "system_id": 1},
        "npc-pip": {**zero, "unknown_name": 1},
        "npc-sable": zero,
        "npc-tobiah": zero,
    }


@pytest.mark.django_db
def test_leak_world_v1_tavern_holds_ids_names_aliases_privates_and_ordinary_words(activate_save):
    activate_save(import_omnia(V1).save)
    world = leak_world("tavern-world")
    # tavern-main and cellar have no rows in a v1 world; they are location ids all the same.
    assert world.object_ids == frozenset(
        {"tavern-world", "alice", "bob", "charlie", GUARD, "tavern-main", "cellar"}
    )
    assert world.ordinary_words == frozenset({"cellar"})
    assert dict(world.true_names) == {"alice": "Alice", "bob": "Gareth", "charlie": "Charlie"}
    assert dict(world.aliases["alice"]) == {"bob": "the hooded figure", "charlie": "the bartender"}
    assert [
        (p.object_id, p.attribute_name, p.value, sorted(p.allowed)) for p in world.private_values
    ] == [
        # An ACL may name an entity outside the world (captain-voss): kept, it harms nothing.
        (GUARD, "orders", "keep everyone out of the cellar", ["bob", "captain-voss"]),
        ("alice", "purpose", "searching for her missing brother", []),
        ("bob", "true_name", "Gareth", ["charlie"]),
        ("bob", "weapon", "a dagger strapped to his ankle", [GUARD, "charlie"]),
        ("charlie", "debt", "owes 40 silver to the thieves' guild", []),
        (
            "tavern-world",
            "smuggling_route",
            "the cellar connects to the old sewer",
            ["bob", "charlie"],
        ),
    ]


@pytest.mark.django_db
def test_scan_viewer_and_scan_world_agree_and_unknown_ids_raise(activate_save):
    activate_save(import_omnia(V1).save)
    assert spans(scan_viewer("bob")) == spans(scan_world(viewer_id="bob")[0])
    assert [s.viewer_id for s in scan_world("tavern-world")] == [GUARD, "alice", "bob", "charlie"]
    with pytest.raises(NotFound):
        scan_viewer("nobody")
    with pytest.raises(NotFound):
        scan_world("no-such-world")
    with pytest.raises(NotFound):
        leak_world("alice")  # an entity is not a world


@pytest.mark.django_db
def test_scan_world_counts_progress_once_per_viewer(activate_save):
    activate_save(import_omnia(V1).save)
    ticks: list[int] = []
    scan_world(progress=ticks.append)
    assert ticks == [1, 1, 1, 1]


# --- random worlds ---------------------------------------------------------------------------

NAMES = ["Gareth", "Mirela", "Tomasz", "Ysolde", "Bertram", "Odile", "Casimir", "Fenna"]
DESCRIPTORS = [
    "the hooded figure",
    "the tall stranger",
    "the old woman",
    "the smith",
    "the one in red",
]
SECRETS = ["a key sewn into the hem", "owes the miller nine pennies", "fled the northern garrison"]
DEEDS = ["lights a lamp", "sweeps the floor", "stacks the chairs", "counts the coins"]


def _ids() -> st.SearchStrategy[str]:
    # Ids carry a digit, so none can be a word the prompt's own template writes ("you").
    slug = st.tuples(
        st.text(string.ascii_lowercase, min_size=1, max_size=6), st.integers(0, 999)
    ).map(lambda t: f"{t[0]}-{t[1]}")
    return st.one_of(slug, st.uuids().map(str))


@st.composite
def small_worlds(draw):
    ids = draw(st.lists(_ids(), min_size=5, max_size=7, unique=True))
    world_id, places, people = ids[0], ids[1:3], ids[3:]
    names = draw(
        st.lists(st.sampled_from(NAMES), min_size=len(people), max_size=len(people), unique=True)
    )
    cast = []
    for person, name in zip(people, names, strict=True):
        aliases = {}
        for other, other_name in zip(people, names, strict=True):
            choice = draw(st.sampled_from(["known", "descriptor", "none"]))
            if other != person and choice != "none":
                aliases[other] = (
                    other_name if choice == "known" else draw(st.sampled_from(DESCRIPTORS))
                )
        cast.append(
            {
                "id": person,
                "name": name,
                "name_public": draw(st.booleans()),
                "place": draw(st.sampled_from(places)),
                "aliases": aliases,
                "secret": draw(st.sampled_from(SECRETS)),
                "acl": draw(st.lists(st.sampled_from(people), max_size=2, unique=True)),
            }
        )
    memories = []
    for n in range(draw(st.integers(1, 8))):
        owner, actor, target = (draw(st.sampled_from(people)) for _ in range(3))
        memories.append(
            {
                "id": f"m{n}",
                "owner": owner,
                "actor": actor,
                "target": target,
                "v2": draw(st.booleans()),
                "deed": draw(st.sampled_from(DEEDS)),
            }
        )
    return {"world": world_id, "places": places, "cast": cast, "memories": memories}


def build(world: dict, inject: str | None = None) -> Save:
    """The world written into the save "random"; returns that save (the caller reads in it)."""
    save, _ = Save.objects.get_or_create(name="random", defaults={"kind": "scenario", "era": "v2"})
    with use(save):
        _build(world, inject)
    return save


def _build(world: dict, inject: str | None) -> None:
    w = WorldObject.objects.create(
        id=world["world"], type="world", clock_iso="2026-07-06T12:30:00.000Z"
    )
    for place in world["places"]:
        obj = WorldObject.objects.create(id=place, type="location", world_id=w.id)
        Attribute.objects.create(
            object_id=obj.id, name="description", value="a drafty room", visibility="PUBLIC"
        )
    for person in world["cast"]:
        obj = WorldObject.objects.create(
            id=person["id"],
            type="entity",
            world_id=w.id,
            location_id=person["place"],
            aliases_json=json.dumps(list(person["aliases"].items())),
            is_agent=1,
        )
        Attribute.objects.create(
            object_id=obj.id,
            name="name",
            value=person["name"],
            visibility="PUBLIC" if person["name_public"] else "PRIVATE",
        )
        Attribute.objects.create(
            object_id=obj.id, name="secret", value=person["secret"], visibility="PRIVATE"
        )
        for allowed in person["acl"]:
            AttributeAcl.objects.create(
                object_id=obj.id, attribute_name="secret", entity_id=allowed
            )
    for n, m in enumerate(world["memories"]):
        deed = m["deed"] + (f" near {inject}" if inject and n == 0 else "")
        if m["v2"]:
            intent = {
                "type": "action",
                "actorId": m["actor"],
                "targetIds": [m["target"]],
                "content": f"entity@{m['actor']}[I] {deed} for entity@{m['target']}[them]",
            }
        else:
            intent = {
                "type": "action",
                "actorId": m["actor"],
                "targetIds": [m["target"]],
                "description": deed,
            }
        BufferEntry.objects.create(
            id=m["id"],
            owner_id=m["owner"],
            timestamp=f"2026-07-06T12:{n:02d}:00.000Z",
            intent_json=json.dumps(intent),
            created_at=n + 1,
        )


PROPERTY = settings(
    deadline=None, max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@pytest.mark.django_db
@PROPERTY
@given(small_worlds())
def test_random_worlds_prompts_carry_no_system_id(world):
    with transaction.atomic(), use(build(world)):
        scans = scan_world(world["world"])
        assert [f for scan in scans for f in scan.findings if f.finding.kind == "system_id"] == []
        # Names and secrets only reach a prompt where the viewer may know them.
        assert [f for scan in scans for f in scan.findings] == []
        transaction.set_rollback(True)


@pytest.mark.django_db
@PROPERTY
@given(small_worlds(), st.data())
def test_random_worlds_an_id_in_stored_text_is_reported_not_removed(world, data):
    every_id = [world["world"], *world["places"], *(p["id"] for p in world["cast"])]
    injected = data.draw(st.sampled_from(every_id))
    owner = world["memories"][0]["owner"]
    with transaction.atomic(), use(build(world, inject=injected)):
        scan = scan_viewer(owner)
        text = scan.prompt.text
        assert text.count(injected) == 1
        at = text.index(injected)
        assert [
            (f.finding.kind, f.finding.start, f.finding.entity_id, f.section) for f in scan.findings
        ] == [("system_id", at, injected, "Recent memories")]
        assert prompt_context(get_viewer(owner)).text == text
        transaction.set_rollback(True)


@pytest.mark.django_db
def test_scan_world_only_reads(activate_save):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    activate_save(load_demo().save)
    with CaptureQueriesContext(connection) as queries:
        scan_world()
    # PostgreSQL streams through server-side cursors: DECLARE ... CURSOR ... FOR SELECT.
    statements = [
        q["sql"].split(" FOR ", 1)[-1] if q["sql"].startswith("DECLARE") else q["sql"]
        for q in queries.captured_queries
    ]
    assert {sql.lstrip().split()[0].upper() for sql in statements} == {"SELECT"}
