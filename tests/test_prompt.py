"""The prompt context: what an NPC's LLM call receives, section by section, with no ids."""

from __future__ import annotations

import pytest

from memory.engine.knowledge import get_viewer
from memory.engine.prompt import PromptContext, Section, prompt_context
from memory.worlds.demo import load_demo
from memory.worlds.omnia_import import import_omnia
from memory.worlds.scenario import load_world
from tests.helpers import FIXTURES

SECTION_NAMES = [
    "Current moment",
    "The world as you perceive it",
    "Long-term memory",
    "Recent memories",
    "Sessions",
]

ALICE_V1 = """\
## Current moment
It is 12:38 PM on Monday, July 6, 2026.
You are in a place you cannot name.

## The world as you perceive it
The world: The Rusty Flagon.
- weather: light rain
You:
- appearance: a young woman in a dusty green travelling cloak
- health: 100
- name: Alice
- purpose: searching for her missing brother
Here with you:
- an unfamiliar figure
  - appearance: a bored town guard in dented chainmail
- the bartender
  - occupation: bartender

## Long-term memory
(no long-term memory)

## Recent memories
[12:00:00 PM] the hooded figure spoke to the bartender: "Bob greets Charlie"
[12:05:00 PM] the hooded figure Bob attempts to break the lock latch (Outcome: Failed - The lock is made of reinforced steel.)
[12:08:00 PM] you spoke to the hooded figure, the bartender: "asks whether anyone has seen a boy with red hair"
[12:10:00 PM] the bartender pours a mug of ale for the traveller (Outcome: Succeeded)
[12:20:00 PM] the hooded figure descends the stairs to the cellar
[12:32:00 PM] you leaves a silver coin on the bar (Outcome: Succeeded)
[12:35:00 PM] an unfamiliar figure climbs up from the cellar and looks around (Outcome: Succeeded)
[12:37:00 PM] an unfamiliar figure spoke to you: "What is your business here?"
[12:38:00 PM] you spoke to someone: "Only passing through"

## Sessions
(no sessions)"""


@pytest.mark.django_db
def test_prompt_context_v1_alice_exact(activate_save):
    activate_save(import_omnia(FIXTURES / "omnia-74ffb45-tavern.sqlite").save)
    context = prompt_context(get_viewer("alice"))
    assert [s.name for s in context.sections] == SECTION_NAMES
    # The guard (a UUID) and bob stand here only under alice's labels; bob is in the cellar.
    assert context.text == ALICE_V1


@pytest.mark.django_db
def test_prompt_context_places_by_description_and_exits(
    django_assert_max_num_queries, activate_save
):
    activate_save(load_demo().save)
    viewer = get_viewer("npc-maren")
    with django_assert_max_num_queries(20):
        context = prompt_context(viewer)
    moment, world = context.sections[0].text, context.sections[1].text
    assert moment == (
        "It is 12:30 PM on Monday, July 6, 2026.\n"
        "You are in a low-beamed tavern with fishing nets hung from the rafters."
    )
    assert world.splitlines()[:4] == [
        "The world:",
        "- tide: ebbing",
        "- weather: sea fog lifting by noon",
        "Ways out: tavern door (open) to a fish-scented stone quay where the night boats tie up.",
    ]
    assert "loc-" not in context.text and "npc-" not in context.text


@pytest.mark.django_db
def test_prompt_context_sentence_descriptions_read_as_a_place(activate_save):
    activate_save(load_world(FIXTURES / "omnia-scenario-talking-room-c292626.json").save)
    context = prompt_context(get_viewer("7c9b83b3-8cfb-4e89-8d77-626a5757d591"))
    assert context.sections[0].text.splitlines()[1] == (
        "You are in a pristine, featureless room with white walls, ceiling, and floor. "
        "There are no visible doors, windows, seams, or vents."
    )
    assert (
        "Here with you:\n- an unfamiliar figure\n  - appearance: A medium-build human"
        in context.text
    )


@pytest.mark.django_db
def test_prompt_context_json_twin_matches_text(cast):
    context = prompt_context(get_viewer("bob"))
    answer = context.to_json()
    assert [s["name"] for s in answer["sections"]] == SECTION_NAMES
    assert answer["text"] == context.text
    # bob sees his own secrets; the world's name heads its section.
    assert context.sections[1].text == (
        "The world: The Rusty Flagon.\n"
        "You:\n"
        "- appearance: a tall man hidden under a dark hooded cloak\n"
        "- name: Gareth\n"
        "- weapon: a dagger strapped to his ankle\n"
        "Here with you:\n"
        "- the traveller\n"
        "  - appearance: a young woman in a dusty green travelling cloak\n"
        "- an unfamiliar figure\n"
        "  - occupation: bartender"
    )


def test_section_at_names_the_section_of_each_offset():
    context = PromptContext("v", [Section("A", "ab"), Section("B", "cd")])
    assert context.text == "## A\nab\n\n## B\ncd"
    assert [context.section_at(i) for i in range(len(context.text))] == ["A"] * 7 + [
        "B"
    ] * 9  # the blank line goes with what follows
