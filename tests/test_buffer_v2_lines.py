"""Later-era lines through `render_buffer`, as each viewer reads them (issue 13 items 8, 9).

Each row is written through the write door into the viewer's own buffer (a witness's buffer
holds what others did), and the command prints the line. The cast: alice knows bob as "the
hooded figure" and charlie as "the bartender"; bob (true name Gareth) knows alice as "the
traveller"; charlie knows bob as "Gareth".
"""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command
from hypothesis import given, settings
from hypothesis import strategies as st

from memory.engine.buffer.v2 import hydrate
from memory.engine.knowledge import Viewer
from memory.engine.write_door import remember
from memory.services import set_alias
from memory.worlds.scenario import load_world
from tests.helpers import FIXTURES, at


def lines_of(viewer_id: str, reading: str = "corrected") -> list[str]:
    """The corrected reading unless asked: these cases are about putting omnia's bugs right."""
    out = io.StringIO()
    call_command("render_buffer", viewer_id, "--reading", reading, stdout=out)
    return out.getvalue().splitlines()


def witness(viewer: str, actor: str, content: str, kind: str = "monologue") -> None:
    remember(
        viewer,
        {"type": kind, "content": content, "actorId": actor, "targetIds": [], "modifiers": []},
        timestamp=at(1),
    )


MALFORMED = [
    # An unclosed bracket: everything after it is the tag's words, never the line's.
    ("alice", "bob", "entity@bob[Gareth waves", "The hooded figure"),
    ("bob", "bob", "entity@bob[Gareth waves", "I"),
    (
        "charlie",
        "alice",
        "entity@alice[I] wave at entity@bob[Gareth",
        "An unfamiliar figure waves at Gareth",
    ),
    # Omnia's later runtime nests a tag in another's id and words: one tag, one label.
    (
        "alice",
        "bob",
        "entity@entity@bob[bob][the entity@bob[bob]] waves at entity@charlie[Charlie]",
        "The hooded figure waves at the bartender",
    ),
    (
        "alice",
        "charlie",
        "entity@charlie[I] nod at entity@entity@bob[bob][the entity@bob[bob]]",
        "The bartender nods at the hooded figure",
    ),
    (
        "bob",
        "alice",
        "entity@alice[I] wave at entity@entity@bob[bob][the entity@bob[bob]]",
        "The traveller waves at me",
    ),
    # Brackets inside a tag's words are the words'.
    ("alice", "bob", "entity@bob[the [hooded] man] sits down", "The hooded figure sits down"),
]


@pytest.mark.parametrize(("viewer", "actor", "content", "line"), MALFORMED)
def test_render_buffer_shows_a_malformed_tag_as_the_viewers_label(
    cast, viewer, actor, content, line
):
    witness(viewer, actor, content)
    assert lines_of(viewer) == [line]


GRAMMAR = [
    # A second verb after "and" agrees with the subject as the first does.
    (
        "alice",
        "bob",
        "entity@bob[I] draw a knife and step forward",
        "The hooded figure draws a knife and steps forward",
    ),
    (
        "bob",
        "bob",
        "entity@bob[Bob] draws a knife and steps toward entity@alice[her]",
        "I draw a knife and step toward the traveller",
    ),
    ("alice", "bob", "entity@bob[I] nod and smile", "The hooded figure nods and smiles"),
    (
        "charlie",
        "bob",
        "entity@bob[I] draw a knife, then step back and wait",
        "Gareth draws a knife, then steps back and waits",
    ),
    # ... but a noun closing a list stays a noun, and a modal keeps its verbs bare.
    (
        "alice",
        "bob",
        "entity@bob[I] take the salt and pepper",
        "The hooded figure takes the salt and pepper",
    ),
    (
        "alice",
        "bob",
        "entity@bob[I] must reach the cellar and hide",
        "The hooded figure must reach the cellar and hide",
    ),
    ("alice", "bob", "entity@bob[I] didn't see it", "The hooded figure didn't see it"),
    # A reflexive pronoun stays a pronoun when its entity is named earlier in the sentence.
    (
        "alice",
        "bob",
        "entity@bob[He] sits by entity@bob[himself]",
        "The hooded figure sits by himself",
    ),
    ("charlie", "bob", "entity@bob[I] sit by entity@bob[myself]", "Gareth sits by themselves"),
    ("bob", "bob", "entity@bob[I] sit by entity@bob[myself]", "I sit by myself"),
    (
        "bob",
        "alice",
        "entity@alice[I] tell entity@bob[him] about entity@alice[myself]",
        "The traveller tells me about themselves",
    ),
    # An untagged first-person word is the actor's, for anyone else who reads it.
    (
        "bob",
        "alice",
        "I hope my brother is still alive.",
        "The traveller hopes the traveller's brother is still alive.",
    ),
    ("alice", "alice", "I hope my brother is still alive.", "I hope my brother is still alive."),
    (
        "bob",
        "alice",
        'entity@alice[I] say "I am lost" and I sit',
        "The traveller says 'I am lost' and the traveller sits",
    ),
    ("alice", "bob", "I'm tired", "The hooded figure is tired"),
]


@pytest.mark.parametrize(("viewer", "actor", "content", "line"), GRAMMAR)
def test_render_buffer_keeps_the_grammar_of_hydrated_lines(cast, viewer, actor, content, line):
    witness(viewer, actor, content)
    assert lines_of(viewer) == [line]


def test_render_buffer_never_lowers_a_name_but_lowers_a_descriptor_mid_sentence(cast):
    # A descriptor stored with a capital (as generated labels often are) and a proper name.
    set_alias("charlie", "alice", "The traveller", user=None, source="test")
    witness("charlie", "bob", "entity@bob[I] bow to entity@alice[her]")
    remember(
        "charlie",
        {
            "type": "action",
            "content": "entity@alice[She] bows to entity@bob[him]",
            "actorId": "alice",
            "targetIds": ["bob"],
            "modifiers": [],
        },
        timestamp=at(2),
    )
    assert lines_of("charlie") == ["Gareth bows to the traveller", "The traveller bows to Gareth"]


@pytest.mark.django_db
def test_render_buffer_gives_an_untagged_my_of_upstreams_scenario_to_its_actor():
    """Upstream's own demo scenario: the witness's row "entity@<other>[I] wake up from my
    sleep" used to read "from my sleep" to the witness, whose sleep it is not."""
    load_world(FIXTURES / "omnia-scenario-talking-room-c292626.json")
    assert lines_of("7c9b83b3-8cfb-4e89-8d77-626a5757d591") == [
        "I didn't have a choice. I would have been sent to jail if I hadn't agreed to do this "
        "experiment.",
        "I woke up today in the room and saw an unfamiliar figure!",
        "An unfamiliar figure wakes up from an unfamiliar figure's sleep.",
    ]


_PIECES = st.sampled_from(
    ["entity@bob[", "entity@entity@bob[bob][", "entity@entity@bob[bob][the ", "]", " waves", " at "]
)


@given(st.lists(_PIECES, max_size=12))
@settings(max_examples=300, deadline=None)
def test_hydrate_never_shows_a_tags_words_or_a_raw_tag(pieces):
    """However the brackets fall, words written inside a tag (here bob's true name, written
    right after each opening bracket) never reach a reader who does not know it, and no raw
    tag does either."""
    content = "".join(piece + "Gareth" if piece.endswith("[") else piece for piece in pieces)
    alice = Viewer.of(id="alice", aliases={"bob": "the hooded figure"})
    line = hydrate(content, alice, "bob")
    assert "Gareth" not in line
    assert "entity@" not in line


_TAG_PIECES = st.sampled_from(
    ["entity@", "bob", "a-1", "[", "]", "the ", " ", "@", "\u00e9", "\u2003", ".", "I"]
)


@given(st.lists(_TAG_PIECES, max_size=14))
@settings(max_examples=500, deadline=None)
def test_a_plain_tag_read_in_one_match_is_the_tag_the_walker_reads(pieces):
    """find_tags reads a tag as omnia writes it (`entity@id[words]`) in one match and walks
    every other: on any text both give the tags the walker alone gives."""
    from memory.engine.buffer import tags

    content = "".join(pieces)
    walked = []
    pos = content.find("entity@")
    while pos >= 0:
        walked.append(tags._tag_at(content, pos))
        pos = content.find("entity@", walked[-1].end)
    found = tags.find_tags(content)
    assert [(t.start, t.end, t.id, t.words) for t in found] == [
        (t.start, t.end, t.id, t.words) for t in walked
    ]
