"""The prompt at a moment (issue 27 item 6): the context the viewer's LLM call would have
received then (`prompt_context(at=)`, the page's ?at=, the API's at, render_prompt --at), its
leaks scanned then, and each finding's first moment in the prompt."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from memory.active_save import use
from memory.engine.clock import now_us, time_key, world_time_at
from memory.engine.errors import InvalidInput
from memory.engine.knowledge import get_viewer
from memory.engine.leaks.world_scan import scan_viewer, scan_viewer_at
from memory.engine.projections.doors import digest_at
from memory.engine.projections.doors import rows_for_digests as moments_rows_for_digests
from memory.engine.projections.rows import owner_rows
from memory.engine.prompt import RECENT, SECTION_NAMES, SESSIONS, prompt_context
from memory.engine.saves import get_save
from memory.models import Attribute, BufferEntry, LedgerEntry, WorldObject
from memory.selectors import moments
from memory.selectors.pair import FOLLOWED_ALIASES, IMPORTED_ALIASES
from memory.worlds.live import Follower
from memory.worlds.standin import StandIn
from tests.helpers import TAVERN_V1
from tests.test_pair import _clock, _set_alias


def _row(id_: str, timestamp: str, description: str, created_at: int) -> None:
    BufferEntry.objects.create(
        id=id_,
        owner_id="alice",
        timestamp=timestamp,
        intent_json=json.dumps(
            {
                "type": "dialogue",
                "actorId": "bob",
                "targetIds": ["charlie"],
                "description": description,
            }
        ),
        created_at=created_at,
    )


def _lore(id_: str, timestamp: str, content: str) -> None:
    LedgerEntry.objects.create(
        id=id_,
        owner_id="alice",
        timestamp=timestamp,
        content=content,
        importance=3,
        scope_id="home:alice",
        slug=id_,
        name=id_,
        created_at=now_us(),
    )


@pytest.fixture
def evening(cast):
    """alice overhears bob greet charlie by bob's true name at 12:00, sees a cellar at 12:05
    (lore), and hears of bob's dagger at 12:10."""
    _row("m1", "2026-07-06T12:00:00.000Z", "Gareth greets Charlie", 1)
    _lore("cellar", "2026-07-06T12:05:00.000Z", "The cellar door sticks.")
    _row("m2", "2026-07-06T12:10:00.000Z", "I keep a dagger strapped to his ankle", 2)
    return cast


AT_12_06, AT_12_10 = "2026-07-06T12:06:00.000Z", "2026-07-06T12:10:00.000Z"
AT_1206 = """\
## Current moment
It is 12:06 PM on Monday, July 6, 2026.
You are in a place you cannot name.

## The world as you perceive it
The world: The Rusty Flagon.
You:
- appearance: a young woman in a dusty green travelling cloak
- name: Alice
- purpose: searching for her missing brother
Here with you:
- the hooded figure
  - appearance: a tall man hidden under a dark hooded cloak
- the bartender
  - occupation: bartender

## Long-term memory
- The cellar door sticks.

## Recent memories
[12:00:00 PM] the hooded figure spoke to the bartender: "Gareth greets Charlie"

## Sessions
A scene at an unknown place at 12:00 PM: 1 memory, 1 spoken"""


@pytest.mark.django_db
def test_prompt_at_a_moment_holds_the_rows_of_then(evening):
    alice = get_viewer("alice")
    assert prompt_context(alice, at="2026-07-06T12:06:00.000Z").text == AT_1206
    before = prompt_context(alice, at="2026-07-06T11:59:59.999Z").text
    assert before.split("## Long-term memory\n")[1] == (
        "(no long-term memory)\n\n## Recent memories\n(nothing yet)\n\n## Sessions\n(no sessions)"
    )
    later = prompt_context(alice, at="2026-07-06T12:10:00.000Z").text
    assert later.split("## Recent memories\n")[1] == (
        '[12:00:00 PM] the hooded figure spoke to the bartender: "Gareth greets Charlie"\n'
        '[12:10:00 PM] the hooded figure spoke to the bartender: "I keep a dagger strapped to '
        'his ankle"\n\n## Sessions\nA scene at an unknown place from 12:00 PM to 12:10 PM: '
        "2 memories, 2 spoken"
    )


@pytest.mark.django_db
def test_prompt_api_at_a_moment_scans_the_leaks_of_then(evening, reader_client):
    base = "/api/saves/cast/viewers/alice/prompt"
    then = reader_client.get(f"{base}?at=2026-07-06T12:06:00Z").json()
    assert (then["at"], then["aliases"], then["text"]) == (
        "2026-07-06T12:06:00.000Z",
        IMPORTED_ALIASES,
        AT_1206,
    )
    assert [(f["kind"], f["text"], f["first_at"], f["first_line"]) for f in then["findings"]] == [
        (
            "unknown_name",
            "Gareth",
            "2026-07-06T12:00:00.000Z",
            '[12:00:00 PM] the hooded figure spoke to the bartender: "Gareth greets Charlie"',
        ),
        (
            "unknown_name",
            "Charlie",
            "2026-07-06T12:00:00.000Z",
            '[12:00:00 PM] the hooded figure spoke to the bartender: "Gareth greets Charlie"',
        ),
    ]
    now = reader_client.get(base).json()
    assert (now["at"], now["aliases"]) == (None, None)
    dagger = [f for f in now["findings"] if f["kind"] == "private_attribute"]
    assert [(f["text"], f["first_at"], f["first_line"]) for f in dagger] == [
        (
            "a dagger strapped to his ankle",
            "2026-07-06T12:10:00.000Z",
            '[12:10:00 PM] the hooded figure spoke to the bartender: "I keep a dagger strapped '
            'to his ankle"',
        )
    ]


@pytest.mark.django_db
def test_prompt_page_at_a_moment_has_the_control_and_first_moments(evening, reader_client):
    page = reader_client.get("/saves/cast/viewers/alice/prompt/?at=2026-07-06T12:06:00.000Z")
    html = page.content.decode()
    assert page.status_code == 200
    assert 'name="at" value="2026-07-06T12:06:00.000Z"' in html
    assert 'What Alice’s LLM call would receive at <time class="moment"' in html
    assert IMPORTED_ALIASES in html
    assert html.count('<span class="first-seen small">first in the prompt at ') == 2
    assert (
        '<a href="/saves/cast/viewers/alice/prompt/?at=2026-07-06T12%3A00%3A00.000Z">'
        '<time class="moment" datetime="2026-07-06T12:00:00.000Z"' in html
    )
    fragment = reader_client.get(
        "/saves/cast/viewers/alice/prompt/?at=2026-07-06T12:06:00.000Z",
        headers={"HX-Request": "true"},
    ).content.decode()
    assert fragment.lstrip().startswith('<section id="prompt-panel"')


@pytest.mark.parametrize(
    "at",
    [
        "yesterday",
        "2026-07-06T12:06:00",
        "2026-13-45T25:00:00Z",
        "<script>alert(1)</script>",
        "a\x00b",
    ],
)
@pytest.mark.django_db
def test_a_bad_moment_is_a_400_never_a_500(evening, reader_client, at):
    page = reader_client.get("/saves/cast/viewers/alice/prompt/", {"at": at})
    api = reader_client.get("/api/saves/cast/viewers/alice/prompt", {"at": at})
    assert (page.status_code, api.status_code) == (400, 400)
    assert "<script>alert(1)</script>" not in page.content.decode()
    assert api.json()["field"] == "at"


@pytest.mark.django_db
def test_render_prompt_at_prints_the_context_of_then(evening):
    out, err = StringIO(), StringIO()
    call_command("render_prompt", "alice", "--at", "2026-07-06T12:06:00Z", stdout=out, stderr=err)
    assert out.getvalue() == AT_1206 + "\n"
    assert err.getvalue() == IMPORTED_ALIASES + "\n"
    with pytest.raises(CommandError) as refused:
        call_command("render_prompt", "alice", "--at", "noon", stdout=StringIO())
    assert refused.value.returncode == 2
    assert str(refused.value) == (
        "--at: 'noon' is not an ISO-8601 time with a zone, like 2026-07-06T12:38:00.000Z"
    )


def test_world_time_at_takes_omnias_form_and_refuses_the_rest():
    assert world_time_at("2026-07-06T14:36:00.123456+02:00") == "2026-07-06T12:36:00.123Z"
    with pytest.raises(InvalidInput) as refused:
        world_time_at("2026-07-06")
    assert refused.value.field == "at"


def test_prompt_at_reads_the_imported_tavern_as_it_stood(two_eras):
    with use(get_save(TAVERN_V1)):
        text = prompt_context(get_viewer("alice"), at="2026-07-06T12:05:00.000Z").text
    assert text.split("## Recent memories\n")[1] == (
        '[12:00:00 PM] the hooded figure spoke to the bartender: "Bob greets Charlie"\n'
        "[12:05:00 PM] the hooded figure Bob attempts to break the lock latch (Outcome: Failed "
        "- The lock is made of reinforced steel.)\n\n## Sessions\n"
        "A scene at an unfamiliar place from 12:00 PM to 12:05 PM: 2 memories, 1 spoken"
    )


@pytest.mark.django_db
def test_prompt_at_reads_the_aliases_the_follower_saw_before_the_moment(reader_client, tmp_path):
    game = StandIn(tmp_path / "game.sqlite", seed=4, delete_every=0, alias_every=0, ledger_every=0)
    follower = Follower(tmp_path / "game.sqlite")
    game.turn(actor="tobin", content="entity@tobin[I] tie a rope")
    follower.tick()
    before_change = _clock(game)
    game.turn(actor="tobin", content="entity@tobin[I] whistle")
    _set_alias(game, "mara", "tobin", "a wiry dockhand")
    change = _clock(game)
    follower.tick()
    game.close()
    base = "/api/saves/game/viewers/mara/prompt"
    then = reader_client.get(base, {"at": before_change}).json()
    now = reader_client.get(base, {"at": change}).json()
    after = reader_client.get(base).json()
    assert then["aliases"] == FOLLOWED_ALIASES
    recent = "\n## Recent memories\n"
    assert then["text"].split(recent)[1].startswith("An unfamiliar figure ties a rope\n")
    # At the change's own moment the viewer still goes in with the label of before.
    assert (
        now["text"]
        .split(recent)[1]
        .startswith("An unfamiliar figure ties a rope\nAn unfamiliar figure whistles")
    )
    assert (
        after["text"]
        .split(recent)[1]
        .startswith("A wiry dockhand ties a rope\nA wiry dockhand whistles")
    )


@pytest.mark.parametrize("at", [None, "2026-07-06T11:59:59.999Z", AT_12_06, AT_12_10])
@pytest.mark.django_db
def test_a_prompt_of_some_sections_is_those_sections_of_the_whole(evening, at):
    alice = get_viewer("alice")
    whole = prompt_context(alice, at=at).sections
    assert [s.name for s in whole] == list(SECTION_NAMES)
    for name in SECTION_NAMES:
        assert prompt_context(alice, at=at, only=[name]).sections == [
            s for s in whole if s.name == name
        ]
    assert prompt_context(alice, at=at, only=[RECENT, SESSIONS]).sections == whole[3:]
    assert prompt_context(alice, at=at, only=[]).sections == []


@pytest.mark.django_db
def test_first_moments_probe_each_finding_s_section_alone(evening, monkeypatch):
    """The answers are those of probing whole prompts, and the viewer's rows, which only the
    Sessions section folds again, are never read for findings elsewhere."""
    alice = get_viewer("alice")
    found = scan_viewer("alice").findings
    assert sorted({f.section for f in found}) == ["Recent memories"]
    built: list[tuple[str, tuple[str, ...]]] = []
    real_scan = moments.scan_viewer_at

    def scan_whole(viewer, moment, *args, only=None, **kwargs):
        built.append((moment, tuple(only or ())))
        return real_scan(viewer, moment, *args, **kwargs)  # `only` dropped: the whole prompt

    monkeypatch.setattr(moments, "scan_viewer_at", scan_whole)
    whole = moments.first_moments(alice, found)
    monkeypatch.undo()

    def unread(viewer_id):
        raise AssertionError(f"{viewer_id}'s rows read for a finding outside Sessions")

    monkeypatch.setattr(moments, "rows_for_digests", unread)
    alone = moments.first_moments(alice, found)
    assert alone == whole
    assert {(key[2], seen.at) for key, seen in alone.items()} == {
        ("Gareth", "2026-07-06T12:00:00.000Z"),
        ("Charlie", "2026-07-06T12:00:00.000Z"),
        ("a dagger strapped to his ankle", "2026-07-06T12:10:00.000Z"),
    }
    assert built == [
        ("2026-07-06T12:00:00.000Z", ("Recent memories",)),
        ("2026-07-06T12:10:00.000Z", ("Recent memories",)),
    ]


@pytest.mark.django_db
def test_a_finding_in_the_sessions_section_is_probed_with_the_viewer_s_rows(evening, monkeypatch):
    """A leak the digest carries (a scene at a place whose name holds a true name) is found
    at its first moment by folding the viewer's rows again, as the whole prompt is: the
    moments asked are those of the rows holding the name, the Sessions section built alone."""
    WorldObject.objects.create(id="forge", type="location", world_id="tavern")
    Attribute.objects.create(
        object_id="forge", name="name", value="Gareth's forge", visibility="PUBLIC"
    )
    _row("m3", "2026-07-06T12:20:00.000Z", "Gareth, mind the bellows", 3)
    BufferEntry.objects.filter(id="m3").update(location_id="forge")
    alice, at = get_viewer("alice"), "2026-07-06T12:30:00.000Z"
    found = scan_viewer_at(alice, at).findings
    assert [(f.section, f.finding.text) for f in found if f.section == SESSIONS] == [
        (SESSIONS, "Gareth")
    ]
    read: list[str] = []

    def rows_read(viewer_id):
        read.append(viewer_id)
        return moments_rows_for_digests(viewer_id)

    monkeypatch.setattr(moments, "rows_for_digests", rows_read)
    firsts = moments.first_moments(alice, found, at)
    assert read == ["alice"]
    assert firsts[(SESSIONS, "unknown_name", "Gareth", "bob")] == moments.FirstSeen(
        "2026-07-06T12:20:00.000Z",
        "A scene at Gareth's forge at 12:20 PM: 1 memory, 1 spoken",
    )


# Stamps in every form a row may hold: toISOString()'s, the same instants written otherwise
# (no milliseconds, an offset, a lowercase t), one shaped like toISOString's that names no
# instant, and text that is no time at all.
STAMPS = [
    "2026-07-06T12:00:00.000Z",
    "2026-07-06T12:00:00Z",
    "2026-07-06T12:00:00.500Z",
    "2026-07-06T14:00:01+02:00",
    "2026-07-06T11:59:59.999Z",
    "2026-07-06t12:00:02.000z",
    "2026-07-06T12:00:03.000Z",
    "2026-13-45T25:00:00.000Z",
    "yesterday",
    "2026-07-06T23:59:59.999999+00:00",
    "2026-07-07T00:00:00.000Z",
]


@pytest.mark.django_db
def test_a_digest_at_a_moment_reads_the_rows_it_needs_and_folds_the_same(cast):
    """The digest at a moment reads only the rows that may be at or before it (stamps in
    toISOString's form by their text, every other form whole), and folds the same rows, in
    the same order, as a fold of every row kept by key."""
    for n, stamp in enumerate(STAMPS):
        _row(f"s{n}", stamp, f"line {n}", created_at=100 - n)
        BufferEntry.objects.filter(id=f"s{n}").update(conversation_id=f"c{n % 4}")
    every = owner_rows("alice")
    moments = sorted({time_key(s) for s in STAMPS} | {"2026-07-06T12:00:00.499999Z"})
    for key in moments:
        kept = [r for r in every if (r.key or time_key(r.timestamp)) <= key]
        read = owner_rows("alice", until=key)
        assert [r for r in read if (r.key or time_key(r.timestamp)) <= key] == kept, key
        assert digest_at("alice", key) == digest_at("alice", key, rows=every), key
    # At noon: the rows up to noon in toISOString's form, and every row in another form.
    noon = owner_rows("alice", until=time_key("2026-07-06T12:00:00.000Z"))
    assert sorted(r.timestamp for r in noon) == sorted(
        [STAMPS[0], STAMPS[4]] + [s for s in STAMPS if len(s) != 24 or s[10] != "T" or s[23] != "Z"]
    )
    # A key that names no instant reads every row.
    assert owner_rows("alice", until=time_key("yesterday")) == every
