"""Verbs coordinated with a subject's head verb: "I draw a knife and step forward" reads
"The hooded figure draws a knife and steps forward", so when the head verb changes person the
verbs joined to it by "and", "or", "but" or "then" change with it.

Telling a coordinated verb from a coordinated noun ("pass the salt and pepper") takes more than
the words around it; without a parser this decides by what follows the word, which is what a
verb has and a noun in a list does not: an object, a particle or a preposition ("and step
forward", "and greet him", "and sit by the fire"), or nothing at all after an intransitive
first verb ("nod and smile"). A word after an object at the end of the clause stays as it is
("takes the salt and pepper"). What cannot be told is left as the author wrote it.
"""

from __future__ import annotations

import re
from collections.abc import Callable

_TOKEN = re.compile(r"[A-Za-z][A-Za-z'’]*|[^\sA-Za-z]")
# Where a clause (and with it the reach of its subject) ends; "'" is a quote here, because an
# apostrophe inside or at the end of a word is part of that word's token.
_CLAUSE_END = frozenset(".!?;:'\"“”‘’()—–[]")
_COORDINATORS = frozenset(["and", "or", "but", "then"])
# A new subject after the coordinator opens a new clause with its own verb.
_SUBJECTS = frozenset(["i", "he", "she", "they", "we", "you", "it", "there", "nobody", "someone"])
_SUBORDINATORS = frozenset(
    [
        "because",
        "while",
        "when",
        "whenever",
        "that",
        "which",
        "who",
        "whom",
        "whose",
        "if",
        "whether",
        "although",
        "though",
        "as",
        "so",
        "unless",
        "until",
        "before",
        "after",
        "since",
        "where",
        "once",
        "than",
    ]
)
_DETERMINERS = frozenset(
    [
        "the",
        "a",
        "an",
        "this",
        "that",
        "these",
        "those",
        "some",
        "any",
        "every",
        "each",
        "another",
        "no",
        "all",
        "both",
        "my",
        "your",
        "his",
        "her",
        "its",
        "our",
        "their",
    ]
)
_OBJECT_PRONOUNS = frozenset(
    [
        "me",
        "him",
        "her",
        "them",
        "us",
        "it",
        "you",
        "myself",
        "himself",
        "herself",
        "themselves",
        "themself",
        "itself",
        "yourself",
    ]
)
# Words a verb is followed by and a noun closing a list rarely is.
_PARTICLES = frozenset(
    [
        "to",
        "at",
        "on",
        "in",
        "into",
        "onto",
        "by",
        "with",
        "toward",
        "towards",
        "through",
        "across",
        "past",
        "behind",
        "around",
        "beside",
        "against",
        "over",
        "under",
        "near",
        "from",
        "out",
        "up",
        "down",
        "away",
        "back",
        "backward",
        "backwards",
        "forward",
        "off",
        "aside",
        "inside",
        "outside",
        "closer",
        "nearer",
        "along",
        "about",
        "upon",
    ]
)
# Adverbs that may sit between a subject and its verb ("Bob also waits").
ADVERBS = frozenset(
    [
        "also",
        "then",
        "never",
        "still",
        "just",
        "always",
        "often",
        "already",
        "now",
        "soon",
        "only",
        "even",
        "finally",
        "again",
        "not",
    ]
)
_NOT_A_VERB = _DETERMINERS | _OBJECT_PRONOUNS | _PARTICLES | frozenset(["not", "no", "more"])
_NOUN_ENDINGS = ("tion", "sion", "ness", "ment", "ity", "ance", "ence", "ship", "hood", "ism")
# Verbs ending in -ly: never taken for adverbs.
LY_VERBS = frozenset(
    [
        "apply",
        "reply",
        "supply",
        "rely",
        "fly",
        "ally",
        "bully",
        "tally",
        "rally",
        "multiply",
        "imply",
        "comply",
        "dally",
        "sully",
    ]
)
# Between "and" and a coordinated verb, "too" and "quickly" may sit as well.
_COORDINATED_ADVERBS = ADVERBS | frozenset(["too", "quickly"])


def is_adverb(word: str, adverbs: frozenset[str] = ADVERBS) -> bool:
    """A word that may sit between a subject and its verb: a listed adverb or an -ly word
    that is not a verb. One rule for the hydrated line (grammar.py) and coordination."""
    low = word.lower()
    return low in adverbs or (low.endswith("ly") and low not in LY_VERBS)


def _adverb(word: str) -> bool:
    return is_adverb(word, _COORDINATED_ADVERBS)


def _could_be_verb(word: str) -> bool:
    low = word.lower()
    return (
        word[:1].islower()
        and low not in _NOT_A_VERB
        and low not in _SUBJECTS
        and not low.endswith(_NOUN_ENDINGS)
    )


def coordinated_agree(
    text: str, pos: int, change: Callable[[str], str], object_follows: bool
) -> str:
    """`text` with `change` applied to each verb coordinated with the head verb that ends at
    `pos`; `object_follows` when a tag comes right after `text` (the last verb's object)."""
    # Nothing past the clause's end is read (every path below stops there): the tokens up to
    # it and it, not the rest of a long line (the leak rescan runs this on 100,000 lines).
    tokens = []
    for m in _TOKEN.finditer(text, pos):
        tokens.append((m.start(), m.end(), word := m.group()))
        if word in _CLAUSE_END:
            break
    edits: list[tuple[int, int, str]] = []
    complement = False  # the conjunct so far has an object or complement after its verb
    infinitive = False  # "try to open the door and step inside": step goes with open
    i = 0
    while i < len(tokens):
        word = tokens[i][2]
        low = word.lower()
        if word in _CLAUSE_END or low in _SUBORDINATORS:
            break
        if not word[0].isalpha():
            i += 1
            continue
        if low in _COORDINATORS:
            j = i + 1
            while j < len(tokens) and (tokens[j][2] == "," or _adverb(tokens[j][2])):
                j += 1
            if j == len(tokens) or tokens[j][2] in _CLAUSE_END:
                break
            start, end, candidate = tokens[j]
            if candidate.lower() in _SUBJECTS or candidate[:1].isupper():
                break  # a new subject: its verb agrees with it, not with ours
            if not _could_be_verb(candidate):
                complement = True
                i = j + 1
                continue
            after = tokens[j + 1][2] if j + 1 < len(tokens) else None
            if after is None:
                verb = object_follows or not complement
            elif after in _CLAUSE_END or after == ",":
                verb = not complement
            else:
                verb = after.lower() in _DETERMINERS | _OBJECT_PRONOUNS | _PARTICLES or _adverb(
                    after
                )
            if verb and not infinitive:
                changed = change(candidate)
                # A first-person verb does not end in a single s: that is a plural noun.
                plural = candidate.endswith("s") and not candidate.endswith("ss")
                if changed != candidate and not (plural and len(changed) > len(candidate)):
                    edits.append((start, end, changed))
                complement = False
            else:
                complement = True
            i = j + 1
            continue
        if low == "to" and i + 1 < len(tokens):
            following = tokens[i + 1][2]
            if following[:1].islower() and following.lower() not in _NOT_A_VERB:
                infinitive = True
        if low not in _PARTICLES and not _adverb(word):
            complement = True
        i += 1
    for start, end, changed in reversed(edits):
        text = text[:start] + changed + text[end:]
    return text
