"""Intent decoder (seed 000 "How It Wires Into Prompts", PRODUCT §5).

Prose written by actor X names others by X's own labels ("the hooded figure"); decoding maps
those labels back to system ids through X's alias map. The deterministic resolver is the
default; an LLM decoder sits behind the same seam and is handed the same alias map.

Rules of the deterministic resolver:
- Labels match as whole words, case-insensitively, longest label first, left to right; a
  matched span is consumed, so "the hooded figure" never also yields "the hooded".
- The actor's self words (I, me, my, myself) resolve to the actor. A self-alias is ignored, as
  in omnia, and an empty label names nothing.
- Two targets sharing a label: the label is reported ambiguous with every candidate, and no
  mention is made for it. Never guess.
- Unresolved references, deliberately simple: outside resolved spans, "the" followed by either
  a run of Capitalised words or one lowercase word ("the guard", "the Red Baron"), and runs of
  Capitalised words that are not sentence-opening function words ("Bob", "Captain Voss").
  It over-reports ("the stairs"): it is a list for a human, not a decision.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any, Protocol

from pydantic import BaseModel, Field, ValidationError

from memory.engine.errors import InvalidInput
from memory.engine.leaks.scanner import fold

SELF_WORDS = ("I", "me", "my", "myself")

# Capitalised at a sentence start without naming anyone.
_FUNCTION_WORDS = frozenset(
    [
        "a",
        "an",
        "the",
        "and",
        "but",
        "or",
        "so",
        "then",
        "when",
        "while",
        "if",
        "as",
        "at",
        "in",
        "on",
        "of",
        "to",
        "for",
        "from",
        "with",
        "by",
        "into",
        "he",
        "she",
        "it",
        "they",
        "we",
        "you",
        "his",
        "her",
        "its",
        "their",
        "our",
        "your",
        "him",
        "them",
        "us",
        "this",
        "that",
        "these",
        "those",
        "there",
        "here",
        "what",
        "who",
        "whom",
        "whose",
        "which",
        "where",
        "why",
        "how",
        "yes",
        "no",
        "not",
        "now",
        "later",
        "after",
        "before",
        "suddenly",
        "meanwhile",
        "still",
        "perhaps",
        "maybe",
        "oh",
        "ah",
        "well",
    ]
)

_THE_PHRASE = re.compile(
    r"(?<!\w)(?i:the)\s+(?:[A-Z][\w'-]*(?:\s+[A-Z][\w'-]*)*|[a-z][\w'-]*)(?![\w'-])"
)
_CAPITALISED_RUN = re.compile(r"(?<![\w'-])[A-Z][\w'-]*(?:\s+[A-Z][\w'-]*)*(?![\w'-])")


@dataclass(frozen=True)
class Mention:
    start: int
    end: int
    text: str
    entity_id: str


@dataclass(frozen=True)
class AmbiguousLabel:
    label: str
    candidates: list[str]


@dataclass(frozen=True)
class Resolution:
    actor_id: str
    mentions: list[Mention] = field(default_factory=list)
    ambiguous: list[AmbiguousLabel] = field(default_factory=list)
    unresolved: list[str] = field(default_factory=list)

    @property
    def target_ids(self) -> list[str]:
        """Distinct ids in order of first mention, the actor left out."""
        seen: dict[str, None] = {}
        for mention in self.mentions:
            if mention.entity_id != self.actor_id:
                seen.setdefault(mention.entity_id)
        return list(seen)

    def to_dict(self) -> dict[str, Any]:
        return {
            "actor_id": self.actor_id,
            "target_ids": self.target_ids,
            "mentions": [
                {"start": m.start, "end": m.end, "text": m.text, "entity_id": m.entity_id}
                for m in self.mentions
            ],
            "ambiguous": [{"label": a.label, "candidates": a.candidates} for a in self.ambiguous],
            "unresolved": list(self.unresolved),
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False)


def _label_table(
    actor_id: str, aliases: Mapping[str, str], self_words: Sequence[str]
) -> dict[str, tuple[str, list[str]]]:
    """casefolded label → (label as the actor writes it, target ids in alias-map order)."""
    table: dict[str, tuple[str, list[str]]] = {}
    for target_id, label in aliases.items():
        label = label.strip()
        if target_id == actor_id or not label:
            continue
        entry = table.setdefault(label.casefold(), (label, []))
        if target_id not in entry[1]:
            entry[1].append(target_id)
    for word in self_words:
        # An alias spelled like a self word ("Me") loses to the actor: prose by X says "me" of X.
        table[word.casefold()] = (word, [actor_id])
    return table


def decode_intent(
    prose: str,
    actor_id: str,
    aliases: Mapping[str, str],
    *,
    self_words: Sequence[str] = SELF_WORDS,
) -> Resolution:
    table = _label_table(actor_id, aliases, self_words)
    mentions: list[Mention] = []
    ambiguous: dict[str, AmbiguousLabel] = {}
    taken: list[tuple[int, int]] = []
    if table:
        # Python's alternation takes the first alternative that matches, so longest first
        # makes each match the longest label starting there.
        labels = sorted(table, key=lambda k: (-len(k), k))
        alternation = "|".join(re.escape(label) for label in labels)
        matcher = re.compile(rf"(?<!\w)(?:{alternation})(?!\w)", re.IGNORECASE)
        for match in matcher.finditer(prose):
            label, targets = table.get(match.group().casefold()) or _by_regex(table, match[0])
            taken.append(match.span())
            if len(targets) == 1:
                mentions.append(Mention(match.start(), match.end(), match.group(), targets[0]))
            elif label not in ambiguous:
                ambiguous[label] = AmbiguousLabel(label, sorted(targets))
    return Resolution(
        actor_id=actor_id,
        mentions=mentions,
        ambiguous=list(ambiguous.values()),
        unresolved=_unresolved(prose, taken, {w.casefold() for w in self_words}),
    )


def _by_regex(table: dict[str, tuple[str, list[str]]], written: str) -> tuple[str, list[str]]:
    # IGNORECASE equates a few characters casefold keeps apart (and back): ask the regex.
    for label, targets in table.values():
        if re.fullmatch(re.escape(label), written, re.IGNORECASE):
            return label, targets
    raise AssertionError(f"{written!r} matched no label")  # unreachable: it matched one


def _unresolved(prose: str, taken: list[tuple[int, int]], self_words: set[str]) -> list[str]:
    def free(start: int, end: int) -> bool:
        return all(end <= s or start >= e for s, e in taken)

    found: list[tuple[int, str]] = []
    for match in _THE_PHRASE.finditer(prose):
        if free(*match.span()):
            found.append((match.start(), match.group()))
            taken.append(match.span())
    for match in _CAPITALISED_RUN.finditer(prose):
        words = match.group().split()
        # Drop sentence-opening function words and self words from the front: "Then Bob".
        offset = match.start()
        while words and (
            words[0].casefold() in _FUNCTION_WORDS or words[0].casefold() in self_words
        ):
            offset = prose.index(words[0], offset) + len(words[0])
            words.pop(0)
        if not words:
            continue
        start = prose.index(words[0], offset)
        if free(start, match.end()):
            found.append((start, prose[start : match.end()]))
    return list(dict.fromkeys(text for _, text in sorted(found)))


# --- the LLM seam ---------------------------------------------------------------------------


def build_decoder_prompt(
    prose: str,
    actor_id: str,
    aliases: Mapping[str, str],
    world_summary: str,
    actor_summary: str,
    known_ids: Sequence[str],
) -> str:
    alias_lines = [
        f'- "{label}" refers to entity ID: "{target_id}"'
        for target_id, label in aliases.items()
        if target_id != actor_id
    ]
    sections = [
        "You are the intent decoder of a narrative simulation engine. The prose below was "
        f'written by the actor "{actor_id}". Resolve every reference it makes to an entity '
        "(names, descriptions, nicknames, pronouns for the actor) to a system entity ID, using "
        "only the known entity IDs and the actor's aliases. When a label fits two entities, "
        "or none, do not guess: list it as ambiguous or unresolved.",
        'Answer with JSON only: {"mentions": [{"text": "<words as written>", "entity_id": '
        '"<id>"}], "ambiguous": [{"label": "<words>", "candidates": ["<id>", ...]}], '
        '"unresolved": ["<words>"]}',
        "=== KNOWN ENTITY IDS ===\n" + (", ".join(known_ids) if known_ids else "(No entities)"),
        "=== ACTOR ALIASES ===\nThe actor refers to other entities using these subjective "
        "names/aliases:\n" + ("\n".join(alias_lines) if alias_lines else "(No known aliases)"),
        "=== WORLD STATE ===\n" + world_summary,
        f"=== ACTOR ===\nActor ID: {actor_id}\n{actor_summary}".rstrip(),
        "=== NARRATIVE PROSE ===\n" + prose,
    ]
    return "\n\n".join(sections)


class IntentDecoderSeam(Protocol):
    def decode(
        self,
        prose: str,
        actor_id: str,
        aliases: Mapping[str, str],
        *,
        world_summary: str = "",
        actor_summary: str = "",
        known_ids: Sequence[str] = (),
    ) -> Resolution: ...


class DeterministicDecoder:
    """The default: no language model, only the actor's alias map."""

    def __init__(self, self_words: Sequence[str] = SELF_WORDS) -> None:
        self.self_words = tuple(self_words)

    def decode(
        self,
        prose: str,
        actor_id: str,
        aliases: Mapping[str, str],
        *,
        world_summary: str = "",
        actor_summary: str = "",
        known_ids: Sequence[str] = (),
    ) -> Resolution:
        return decode_intent(prose, actor_id, aliases, self_words=self.self_words)


class DecoderAnswerError(InvalidInput):
    """The language model's answer is not the JSON the prompt asked for."""


# Words and ids the model lists: a number it wrote unquoted is still read as its text.
_Words = Annotated[str, Field(coerce_numbers_to_str=True)]


class AnswerMention(BaseModel):
    text: str
    entity_id: str


class AnswerAmbiguous(BaseModel):
    label: str
    candidates: list[_Words] = []


class DecoderAnswer(BaseModel):
    """The JSON the decoder prompt asks for. Missing lists are empty; other keys are ignored."""

    mentions: list[AnswerMention] = []
    ambiguous: list[AnswerAmbiguous] = []
    unresolved: list[_Words] = []


def parse_answer(raw: str) -> DecoderAnswer:
    """The model's answer (bare or in a ```json fence) as a DecoderAnswer, or DecoderAnswerError
    naming what is wrong and where."""
    text = raw.strip()
    fenced = re.fullmatch(r"```(?:json)?\s*(.*?)\s*```", text, re.DOTALL)
    if fenced:
        text = fenced.group(1)
    try:
        return DecoderAnswer.model_validate_json(text)
    except ValidationError as exc:
        error = exc.errors(include_url=False)[0]
        if error["type"] == "json_invalid":
            reason = error.get("ctx", {}).get("error", error["msg"])
            raise DecoderAnswerError(f"answer is not JSON: {reason}") from None
        if not error["loc"]:
            raise DecoderAnswerError("answer must be a JSON object") from None
        where = ".".join(str(part) for part in error["loc"])
        raise DecoderAnswerError(f"answer {where}: {error['msg']}", field=where) from None


class LLMDecoder:
    """Builds the decoder prompt, hands it to `complete`, and trusts the answer only as far as
    it can be checked: ids must be known, mention texts must occur in the prose."""

    def __init__(self, complete: Callable[[str], str]) -> None:
        self.complete = complete

    def decode(
        self,
        prose: str,
        actor_id: str,
        aliases: Mapping[str, str],
        *,
        world_summary: str = "",
        actor_summary: str = "",
        known_ids: Sequence[str] = (),
    ) -> Resolution:
        prompt = build_decoder_prompt(
            prose, actor_id, aliases, world_summary, actor_summary, known_ids
        )
        answer = parse_answer(self.complete(prompt))
        allowed = {actor_id, *known_ids, *aliases}
        mentions: list[Mention] = []
        unresolved = list(answer.unresolved)
        cursor = 0
        lowered = fold(prose)
        for item in answer.mentions:
            start = _find(lowered, item.text, cursor)
            if item.entity_id not in allowed or start < 0:
                # An invented id or words the prose does not contain: a reference still open.
                unresolved.append(item.text)
                continue
            cursor = start + len(item.text)
            mentions.append(Mention(start, cursor, prose[start:cursor], item.entity_id))
        ambiguous = [AmbiguousLabel(a.label, list(a.candidates)) for a in answer.ambiguous]
        return Resolution(actor_id, mentions, ambiguous, list(dict.fromkeys(unresolved)))


def _find(lowered_prose: str, text: str, cursor: int) -> int:
    # Mentions come in reading order; fall back to the first occurrence when they do not.
    # fold keeps lengths, so an offset in the folded prose is an offset in the prose.
    needle = fold(text)
    found = lowered_prose.find(needle, cursor)
    return found if found >= 0 else lowered_prose.find(needle)
