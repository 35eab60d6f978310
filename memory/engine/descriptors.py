"""Descriptors: the label a viewer uses for someone it has no name for, built only from what
the viewer can see of them ("the hooded figure"); deterministic and at most four words.
Pure, like the aliases it stands in for."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from memory.engine.aliases import GENERATED_ID, UNFAMILIAR

# Nouns that can head a descriptor of a person or creature, in no particular order.
_HEAD_NOUNS = frozenset(
    [
        "man",
        "woman",
        "boy",
        "girl",
        "child",
        "lad",
        "lass",
        "guard",
        "soldier",
        "knight",
        "traveller",
        "traveler",
        "stranger",
        "figure",
        "merchant",
        "priest",
        "monk",
        "nun",
        "beggar",
        "thief",
        "sailor",
        "farmer",
        "hunter",
        "elf",
        "dwarf",
        "orc",
        "goblin",
        "giant",
        "old-timer",
        "elder",
        "youth",
        "gentleman",
        "lady",
        "mercenary",
        "warrior",
        "wizard",
        "witch",
        "mage",
        "bard",
        "noble",
        "servant",
        "maid",
        "innkeeper",
        "bartender",
        "barkeep",
        "scholar",
        "pilgrim",
        "ranger",
        "cat",
        "dog",
        "horse",
        "creature",
        "human",
        "person",
    ]
)
# Heads that say little; a visible gender names the figure better.
_GENERIC_HEADS = frozenset({"human", "person", "figure", "creature"})
_GENDER_HEADS = {
    "male": "man",
    "man": "man",
    "m": "man",
    "female": "woman",
    "woman": "woman",
    "f": "woman",
    "boy": "boy",
    "girl": "girl",
    "nonbinary": "person",
    "non-binary": "person",
}
# Adjectives worth keeping when they stand before the head noun ("a tall man").
_BUILD_WORDS = frozenset(
    [
        "tall",
        "short",
        "small",
        "tiny",
        "huge",
        "large",
        "big",
        "stout",
        "thin",
        "gaunt",
        "lanky",
        "burly",
        "broad",
        "slender",
        "plump",
        "young",
        "old",
        "elderly",
        "aged",
        "bored",
        "weary",
        "nervous",
        "scarred",
        "grim",
        "cheerful",
        "ragged",
        "hooded",
        "cloaked",
        "masked",
        "veiled",
        "bearded",
        "armoured",
        "armored",
        "robed",
    ]
)
# Things worn or grown that make the figure recognisable, and the adjective they give.
_FEATURE_WORDS = {
    "hood": "hooded",
    "hooded": "hooded",
    "cloak": "cloaked",
    "mask": "masked",
    "masked": "masked",
    "veil": "veiled",
    "beard": "bearded",
    "bearded": "bearded",
    "robe": "robed",
    "robes": "robed",
    "chainmail": "armoured",
    "armour": "armoured",
    "armor": "armoured",
    "scar": "scarred",
    "scarred": "scarred",
    "eyepatch": "one-eyed",
}
_HAIR = re.compile(r"\b([a-z]+)\s+hair\b")
_HAIR_COLOURS = frozenset(
    [
        "dark",
        "black",
        "blonde",
        "blond",
        "fair",
        "red",
        "ginger",
        "brown",
        "grey",
        "gray",
        "white",
        "silver",
        "auburn",
        "golden",
    ]
)
_DESCRIPTOR_KEYS = ("occupation", "profession", "role", "appearance", "description", "clothing")
_GENDER_KEYS = ("gender", "sex")
_WORD = re.compile(r"[a-z][a-z'-]*")


class KnownIds(frozenset):
    """Ids a label must not contain, casefolded once: derive_descriptor for every target of a
    1,000-entity world would otherwise casefold the 1,000 ids a thousand times."""

    @classmethod
    def of(cls, ids: Iterable[str]) -> KnownIds:
        return ids if isinstance(ids, KnownIds) else cls(i.casefold() for i in ids)


def descriptor_words(visible_attributes: Mapping[str, str]) -> set[str]:
    """Every word `derive_descriptor` may look up in its known ids for these attributes: a
    caller may pass, as known ids, only the ids (casefolded) equal to one of these."""
    words = {
        w
        for value in visible_attributes.values()
        if isinstance(value, str)
        for w in _WORD.findall(value.casefold())
    }
    words.update(_GENDER_HEADS.values())
    words.add("figure")
    return words


def derive_descriptor(visible_attributes: Mapping[str, str], known_ids: Iterable[str] = ()) -> str:
    """A deterministic label built only from what the viewer can see.

    Shape: "the" + at most one build word + at most one feature + a head noun, so never more
    than four words. The head is the occupation, else the first person-noun of the appearance
    (a generic one such as "human" yields to a visible gender), else the gender; a build word
    counts only before the head in the appearance; the feature is the first thing worn or
    grown (a hood, a cloak, "dark hair") anywhere in appearance or clothing. Nothing at all
    to go on: "an unfamiliar figure".
    """
    ids = KnownIds.of(known_ids)
    attrs = {k.casefold(): v for k, v in visible_attributes.items() if isinstance(v, str)}

    def words_of(key: str) -> list[str]:
        return [w for w in _WORD.findall(attrs.get(key, "").casefold()) if w not in ids]

    head: str | None = None
    for key in ("occupation", "profession", "role"):
        words = words_of(key)
        if words:
            head = next((w for w in reversed(words) if w in _HEAD_NOUNS), words[-1])
            break
    appearance = words_of("appearance") or words_of("description")
    build: str | None = None
    head_at = next((i for i, w in enumerate(appearance) if w in _HEAD_NOUNS), None)
    if head is None and head_at is not None:
        head = appearance[head_at]
    if head_at is not None:
        build = next((w for w in appearance[:head_at] if w in _BUILD_WORDS), None)
    gender = next((attrs[k].strip().casefold() for k in _GENDER_KEYS if attrs.get(k)), "")
    if (head is None or head in _GENERIC_HEADS) and gender in _GENDER_HEADS:
        head = _GENDER_HEADS[gender]

    feature: str | None = None
    for key in ("appearance", "description", "clothing"):
        text = " ".join(words_of(key))
        hair = _HAIR.search(text)
        candidates: list[tuple[int, str]] = []
        if hair and hair.group(1) in _HAIR_COLOURS:
            candidates.append((hair.start(), f"{hair.group(1)}-haired"))
        for m in _WORD.finditer(text):
            if m.group() in _FEATURE_WORDS:
                candidates.append((m.start(), _FEATURE_WORDS[m.group()]))
                break
        if candidates:
            feature = min(candidates)[1]
            break
    if feature == build:
        feature = None

    if head is None:
        if build is None and feature is None:
            return UNFAMILIAR
        head = "figure"
    if head in ids or GENERATED_ID.search(head):
        return UNFAMILIAR
    return " ".join(w for w in ("the", build, feature, head) if w)
