"""The intent decoder: labels back to ids through the actor's own alias map, and the LLM seam
exercised only with a fake completion."""

from __future__ import annotations

import json

import pytest

from memory.engine.decoder import (
    AmbiguousLabel,
    DecoderAnswerError,
    DeterministicDecoder,
    IntentDecoderSeam,
    LLMDecoder,
    Mention,
    Resolution,
    build_decoder_prompt,
    decode_intent,
    parse_answer,
)

# The same on every backend: CI runs it on SQLite only (see the markers in pyproject.toml).
pytestmark = pytest.mark.pure

ALICE = {"bob": "the hooded figure", "charlie": "the bartender"}


def test_decoder_resolves_labels_and_self_words() -> None:
    prose = "I slide my coin to The Bartender and watch the hooded figure."
    result = decode_intent(prose, "alice", ALICE)
    assert result.mentions == [
        Mention(0, 1, "I", "alice"),
        Mention(8, 10, "my", "alice"),
        Mention(19, 32, "The Bartender", "charlie"),
        Mention(43, 60, "the hooded figure", "bob"),
    ]
    assert result.target_ids == ["charlie", "bob"]
    assert result.ambiguous == []
    assert result.unresolved == []


def test_decoder_longest_label_first() -> None:
    aliases = {"bob": "the figure", "dave": "the hooded figure"}
    result = decode_intent("the hooded figure and the figure", "alice", aliases)
    assert result.mentions == [
        Mention(0, 17, "the hooded figure", "dave"),
        Mention(22, 32, "the figure", "bob"),
    ]


def test_decoder_whole_words_only() -> None:
    result = decode_intent("Bobby meets mythical Gareths", "alice", {"bob": "Bob", "g": "Gareth"})
    assert result.mentions == []
    assert result.unresolved == ["Bobby", "Gareths"]


def test_decoder_ambiguous_label_is_never_guessed() -> None:
    aliases = {"bob": "the tall man", "dave": "The Tall Man", "charlie": "the bartender"}
    result = decode_intent("The tall man glares at the bartender", "alice", aliases)
    assert result.mentions == [Mention(23, 36, "the bartender", "charlie")]
    assert result.ambiguous == [AmbiguousLabel("the tall man", ["bob", "dave"])]
    assert result.target_ids == ["charlie"]


def test_decoder_unresolved_references() -> None:
    prose = "Then Captain Voss enters; the guard nods to the Red Baron and the hooded figure."
    result = decode_intent(prose, "alice", ALICE)
    assert result.unresolved == ["Captain Voss", "the guard", "the Red Baron"]
    assert result.target_ids == ["bob"]


def test_decoder_ignores_self_alias_and_empty_labels() -> None:
    result = decode_intent(
        "the traveller greets the stranger", "alice", {"alice": "the traveller", "x": ""}
    )
    assert result.mentions == []
    assert result.unresolved == ["the traveller", "the stranger"]


def test_decoder_to_json() -> None:
    result = decode_intent("I greet the hooded figure", "alice", ALICE)
    assert json.loads(result.to_json()) == {
        "actor_id": "alice",
        "target_ids": ["bob"],
        "mentions": [
            {"start": 0, "end": 1, "text": "I", "entity_id": "alice"},
            {"start": 8, "end": 25, "text": "the hooded figure", "entity_id": "bob"},
        ],
        "ambiguous": [],
        "unresolved": [],
    }


def test_decoder_prompt_lists_aliases_ids_world_actor_prose() -> None:
    prompt = build_decoder_prompt(
        "I greet the hooded figure",
        "alice",
        {**ALICE, "alice": "me"},
        "The Rusty Flagon, light rain.",
        "a young woman in a green cloak",
        ["alice", "bob", "charlie"],
    )
    assert prompt.split("\n\n")[2:] == [
        "=== KNOWN ENTITY IDS ===\nalice, bob, charlie",
        "=== ACTOR ALIASES ===\nThe actor refers to other entities using these subjective "
        'names/aliases:\n- "the hooded figure" refers to entity ID: "bob"\n'
        '- "the bartender" refers to entity ID: "charlie"',
        "=== WORLD STATE ===\nThe Rusty Flagon, light rain.",
        "=== ACTOR ===\nActor ID: alice\na young woman in a green cloak",
        "=== NARRATIVE PROSE ===\nI greet the hooded figure",
    ]


def test_decoder_deterministic_uses_the_alias_map_alone() -> None:
    decoder: IntentDecoderSeam = DeterministicDecoder()
    result = decoder.decode(
        "I greet the hooded figure", "alice", ALICE, world_summary="ignored", known_ids=["zed"]
    )
    assert result == Resolution(
        "alice",
        mentions=[Mention(0, 1, "I", "alice"), Mention(8, 25, "the hooded figure", "bob")],
    )


def test_decoder_deterministic_takes_its_own_self_words() -> None:
    result = DeterministicDecoder(self_words=["me"]).decode(
        "I greet the hooded figure", "alice", ALICE
    )
    assert result == Resolution(
        "alice", mentions=[Mention(8, 25, "the hooded figure", "bob")], unresolved=["I"]
    )


def test_decoder_llm_parses_and_checks_the_answer() -> None:
    prompts: list[str] = []

    def fake(prompt: str) -> str:
        prompts.append(prompt)
        return (
            "```json\n"
            + json.dumps(
                {
                    "mentions": [
                        {"text": "the hooded figure", "entity_id": "bob"},
                        {"text": "the bartender", "entity_id": "zed"},
                        {"text": "the cook", "entity_id": "charlie"},
                    ],
                    "ambiguous": [{"label": "someone", "candidates": ["bob", "charlie"]}],
                    "unresolved": ["the guard"],
                }
            )
            + "\n```"
        )

    decoder: IntentDecoderSeam = LLMDecoder(fake)
    result = decoder.decode(
        "I pay the bartender and follow the hooded figure",
        "alice",
        ALICE,
        known_ids=["alice", "bob", "charlie"],
    )
    assert result == Resolution(
        "alice",
        mentions=[Mention(31, 48, "the hooded figure", "bob")],
        ambiguous=[AmbiguousLabel("someone", ["bob", "charlie"])],
        unresolved=["the guard", "the bartender", "the cook"],
    )
    assert len(prompts) == 1
    assert prompts[0].endswith(
        "=== NARRATIVE PROSE ===\nI pay the bartender and follow the hooded figure"
    )


def test_decoder_llm_rejects_non_json() -> None:
    with pytest.raises(DecoderAnswerError, match="not JSON"):
        LLMDecoder(lambda _: "bob, I think").decode("I wave", "alice", ALICE)


def test_decoder_llm_answer_may_leave_lists_out_and_add_keys() -> None:
    answer = '{"unresolved": [3], "ambiguous": [{"label": "someone", "candidates": [1, "bob"]}], "note": "hi"}'
    result = LLMDecoder(lambda _: answer).decode("I wave", "alice", ALICE)
    # A number written unquoted is read as its text; a missing list is empty.
    assert result == Resolution(
        "alice", ambiguous=[AmbiguousLabel("someone", ["1", "bob"])], unresolved=["3"]
    )
    assert LLMDecoder(lambda _: "{}").decode("I wave", "alice", ALICE) == Resolution("alice")


@pytest.mark.parametrize(
    ("answer", "message", "field"),
    [
        ("bob, I think", "answer is not JSON: expected value at line 1 column 1", None),
        ('["bob"]', "answer must be a JSON object", None),
        ('{"mentions": null}', "answer mentions: Input should be a valid array", "mentions"),
        ('{"mentions": ["bob"]}', "answer mentions.0: Input should be an object", "mentions.0"),
        (
            '{"mentions": [{"text": "the hooded figure"}]}',
            "answer mentions.0.entity_id: Field required",
            "mentions.0.entity_id",
        ),
        (
            '{"mentions": [{"text": "the hooded figure", "entity_id": 7}]}',
            "answer mentions.0.entity_id: Input should be a valid string",
            "mentions.0.entity_id",
        ),
        (
            '{"ambiguous": [{"candidates": ["bob"]}]}',
            "answer ambiguous.0.label: Field required",
            "ambiguous.0.label",
        ),
        (
            '{"unresolved": "the guard"}',
            "answer unresolved: Input should be a valid array",
            "unresolved",
        ),
        (
            '{"unresolved": [null]}',
            "answer unresolved.0: Input should be a valid string",
            "unresolved.0",
        ),
    ],
)
def test_decoder_llm_refuses_an_answer_not_in_the_asked_shape(answer, message, field) -> None:
    with pytest.raises(DecoderAnswerError) as refused:
        parse_answer(answer)
    assert (str(refused.value), refused.value.field) == (message, field)
