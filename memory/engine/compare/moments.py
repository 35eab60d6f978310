"""What a buffer row says happened, whichever omnia era wrote it: who did what kind of thing
to whom, in which words. The first era wrote an intent as a `description` (and the player's
`originalText`); later omnia writes `content` with `entity@id[words]` tags. A replay in the
other era writes the same moment with new ids, another time and other words, so two rows
are the same moment when their kind, actor and targets are the same people and their words
mostly agree (`same_moment`)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass

# Who the people are never counts as what they did: tags (and their words) are dropped.
_TAG = re.compile(r"entity@(?:entity@)*[^\s\[\]]*(?:\[[^\]]*\])+")
_QUOTED = re.compile(r"[\"“”]([^\"“”]{2,})[\"“”]")
_WORD = re.compile(r"[^\W\d_]{3,}")
_STOP = frozenset(
    {
        "the",
        "and",
        "for",
        "with",
        "from",
        "into",
        "onto",
        "over",
        "under",
        "that",
        "this",
        "there",
        "then",
        "than",
        "his",
        "her",
        "hers",
        "him",
        "its",
        "their",
        "them",
        "they",
        "you",
        "your",
        "are",
        "was",
        "were",
        "has",
        "have",
        "had",
        "not",
        "but",
        "who",
        "what",
        "whom",
        "which",
        "toward",
        "towards",
        "about",
        "just",
        "says",
        "said",
        "say",
        "asks",
        "asked",
    }
)
_KINDS = {"dialogue": "speech", "action": "deed", "monologue": "thought", "thought": "thought"}
# Two moments are one when at least this share of the shorter one's words are the other's.
SAME_WORDS = 0.5


@dataclass(frozen=True)
class Moment:
    kind: str
    actor: str
    targets: frozenset[str]
    words: frozenset[str]


def _stem(word: str) -> str:
    """A crude English stem, enough for "slipped"/"slips"/"slip" and "pours"/"poured"."""
    for suffix in ("ing", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)]
            break
    if len(word) > 3 and word[-1] == word[-2] and word[-1] not in "aeiou":
        word = word[:-1]  # slipp -> slip
    return word


def words_of(text: str, people: frozenset[str] = frozenset()) -> frozenset[str]:
    return frozenset(
        _stem(w)
        for w in (m.casefold() for m in _WORD.findall(text))
        if w not in _STOP and w not in people
    )


def _said(text: str) -> str | None:
    quoted = _QUOTED.findall(text)
    return " ".join(quoted) if quoted else None


def moment_of(
    intent_json: str, who: Callable[[str], str], people: frozenset[str] = frozenset()
) -> Moment | None:
    """The moment a row's intent tells, with people as `who` names them (the same person in
    both saves gets the same key even under two ids); None when the intent is not readable."""
    try:
        intent = json.loads(intent_json)
    except (ValueError, RecursionError):
        return None
    if not isinstance(intent, dict):
        return None
    kind = _KINDS.get(str(intent.get("type")), str(intent.get("type")))
    actor = intent.get("actorId")
    targets = intent.get("targetIds") if isinstance(intent.get("targetIds"), list) else []
    content = intent.get("content")
    if isinstance(content, str):  # later omnia: tagged content
        text = _TAG.sub(" ", content)
        spoken = _said(text) if kind == "speech" else None
    else:  # the first era: what the game says happened, and what the player wrote
        description = str(intent.get("description") or "")
        original = str(intent.get("originalText") or "")
        spoken = _said(original) if kind == "speech" else None
        text = f"{description} {original}"
    return Moment(
        kind=kind,
        actor=who(actor) if isinstance(actor, str) else "",
        targets=frozenset(who(t) for t in targets if isinstance(t, str)),
        words=words_of(spoken or text, people),
    )


def likeness(a: Moment, b: Moment) -> float:
    """0 when the two cannot be one moment; else how much their words agree (0..1]."""
    if (a.kind, a.actor, a.targets) != (b.kind, b.actor, b.targets):
        return 0.0
    if not a.words or not b.words:
        return 1.0 if a.words == b.words else 0.0
    return len(a.words & b.words) / min(len(a.words), len(b.words))


def same_moment(a: Moment | None, b: Moment | None) -> float:
    """The likeness of two moments when it is enough to call them one, else 0."""
    if a is None or b is None:
        return 0.0
    score = likeness(a, b)
    return score if score >= SAME_WORDS else 0.0


@dataclass(frozen=True)
class Cast:
    """Who is who across two saves: each save's ids to one key per person (a replay gives a
    nameless guard a new uuid; the guard keeps his name or his look), and every word of
    anyone's name, which never counts as what happened."""

    keys_a: dict[str, str]
    keys_b: dict[str, str]
    words: frozenset[str] = frozenset()

    @classmethod
    def within_one_save(cls) -> Cast:
        return cls({}, {})

    def who_a(self, object_id: str) -> str:
        return self.keys_a.get(object_id, object_id)

    def who_b(self, object_id: str) -> str:
        return self.keys_b.get(object_id, object_id)
