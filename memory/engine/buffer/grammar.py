"""English agreement around entity tags: what a tag's words are doing in their sentence, and
how the words after it change when who it names changes person.

A v2 `content` is written from its author's point of view ("I say", "she gives her the key");
each reader sees one tag as themselves ("I", "me", "my") and the others by alias ("Gareth").
So for every tag this works out its grammatical role (subject, object, possessive…), the person
the following verb agreed with, and the following text in both forms: for the reader who is
the one tagged (first person) and for everyone else (third person). It reads only the words
around the tags, never who reads them, so the result is worked out once per content.

Over 400 lines only because of the word lists the rules look words up in, one word a line.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from memory.engine.buffer.coordination import coordinated_agree, is_adverb

_SUBJECT, _OBJECT, _POSSESSIVE, _INDEPENDENT, _REFLEXIVE = range(5)
_FIRST_PERSON = ("I", "me", "my", "mine", "myself")

# Person of the words a tag was written with: who the following verb agreed with.
_FIRST, _THIRD, _PLURAL = 1, 3, 0

_CONJUNCTION = re.compile(r"\s*(?:,\s*(?:(?:and|or|nor)\s+)?|(?:and|or|nor)\s+)", re.IGNORECASE)
_NEXT_WORD = re.compile(r"(\s+)([A-Za-z][A-Za-z'’]*)")
_POSSESSIVE_MARK = re.compile(r"['’]s(?![A-Za-z])")
_FIRST_PERSON_CONTRACTION = re.compile(r"['’](m|ve|ll|d)(?![A-Za-z])")
_CONTRACTION_TO_THIRD = {"m": " is", "ve": " has", "ll": " will", "d": " would"}

_PRONOUN_ROLES = {
    "i": (_SUBJECT, _FIRST),
    "he": (_SUBJECT, _THIRD),
    "she": (_SUBJECT, _THIRD),
    "it": (_SUBJECT, _THIRD),
    "they": (_SUBJECT, _PLURAL),
    "we": (_SUBJECT, _PLURAL),
    "me": (_OBJECT, _THIRD),
    "him": (_OBJECT, _THIRD),
    "them": (_OBJECT, _THIRD),
    "us": (_OBJECT, _THIRD),
    "my": (_POSSESSIVE, _THIRD),
    "their": (_POSSESSIVE, _THIRD),
    "its": (_POSSESSIVE, _THIRD),
    "our": (_POSSESSIVE, _THIRD),
    "your": (_POSSESSIVE, _THIRD),
    "mine": (_INDEPENDENT, _THIRD),
    "hers": (_INDEPENDENT, _THIRD),
    "theirs": (_INDEPENDENT, _THIRD),
    "yours": (_INDEPENDENT, _THIRD),
    "ours": (_INDEPENDENT, _THIRD),
    "myself": (_REFLEXIVE, _THIRD),
    "himself": (_REFLEXIVE, _THIRD),
    "herself": (_REFLEXIVE, _THIRD),
    "themselves": (_REFLEXIVE, _THIRD),
    "themself": (_REFLEXIVE, _THIRD),
    "itself": (_REFLEXIVE, _THIRD),
    "yourself": (_REFLEXIVE, _THIRD),
}
# Words after which a noun phrase opens a clause (it is a subject), as opposed to
# prepositions and verbs, after which it is an object.
_CLAUSE_OPENERS = frozenset(
    [
        "why",
        "that",
        "when",
        "while",
        "because",
        "if",
        "whether",
        "where",
        "who",
        "whom",
        "although",
        "though",
        "so",
        "but",
        "then",
        "and",
        "or",
        "nor",
        "once",
        "unless",
        "whereas",
        "how",
        "as",
    ]
)
# Words that can follow "her" when it is an object ("gave her the key"), not a possessive.
_NOT_A_NOUN = frozenset(
    [
        "the",
        "a",
        "an",
        "this",
        "that",
        "these",
        "those",
        "to",
        "for",
        "at",
        "in",
        "on",
        "into",
        "onto",
        "with",
        "by",
        "from",
        "of",
        "about",
        "again",
        "and",
        "or",
        "but",
        "so",
        "then",
        "too",
        "as",
        "if",
        "when",
        "while",
        "up",
        "down",
        "out",
        "away",
        "off",
        "over",
        "now",
        "here",
        "there",
        "softly",
        "gently",
        "quietly",
    ]
)
_MODALS = frozenset(
    [
        "must",
        "can",
        "could",
        "will",
        "would",
        "shall",
        "should",
        "may",
        "might",
        "ought",
        "cannot",
        "can't",
        "couldn't",
        "won't",
        "wouldn't",
        "shan't",
        "shouldn't",
        "mustn't",
        "mightn't",
    ]
)
_PAST = frozenset(
    [
        "was",
        "were",
        "had",
        "did",
        "said",
        "made",
        "knew",
        "thought",
        "told",
        "found",
        "left",
        "felt",
        "brought",
        "began",
        "kept",
        "held",
        "stood",
        "heard",
        "meant",
        "met",
        "ran",
        "paid",
        "sat",
        "spoke",
        "lay",
        "led",
        "grew",
        "lost",
        "fell",
        "sent",
        "built",
        "understood",
        "drew",
        "broke",
        "spent",
        "rose",
        "drove",
        "bought",
        "wore",
        "chose",
        "sought",
        "threw",
        "caught",
        "dealt",
        "won",
        "forgot",
        "shook",
        "hid",
        "slid",
        "fled",
        "fought",
        "stole",
        "swore",
        "rode",
        "wrote",
        "ate",
        "drank",
        "sang",
        "swam",
        "struck",
        "hung",
        "bit",
        "blew",
        "flew",
        "froze",
        "woke",
        "saw",
        "came",
        "went",
        "took",
        "gave",
        "got",
        "became",
    ]
)
_TO_THIRD = {
    "am": "is",
    "are": "is",
    "were": "was",
    "have": "has",
    "do": "does",
    "go": "goes",
    "don't": "doesn't",
    "haven't": "hasn't",
    "aren't": "isn't",
    "weren't": "wasn't",
    "'m": "is",
}
_TO_FIRST = {
    "is": "am",
    "are": "am",
    "were": "was",
    "has": "have",
    "does": "do",
    "goes": "go",
    "doesn't": "don't",
    "hasn't": "haven't",
    "isn't": "am not",
    "aren't": "am not",
    "weren't": "wasn't",
}
_PLURAL_TO_FIRST = {"are": "am", "were": "was", "aren't": "am not", "weren't": "wasn't"}


def _third_person(verb: str) -> str:
    low = verb.lower()
    if low in _TO_THIRD:
        out = _TO_THIRD[low]
    elif low in _MODALS or low in _PAST or low.endswith(("ed", "n't", "n’t")):
        return verb  # a negation not mapped above is a past or a modal's: didn't, hadn't
    elif low.endswith("y") and len(low) > 1 and low[-2] not in "aeiou":
        out = low[:-1] + "ies"
    elif low.endswith(("s", "sh", "ch", "x", "z", "o")):
        out = low + "es"
    else:
        out = low + "s"
    return out.capitalize() if verb[:1].isupper() else out


def _first_person(verb: str, source: int) -> str:
    low = verb.lower()
    if source == _PLURAL:
        out = _PLURAL_TO_FIRST.get(low)
        if out is None:
            return verb
    elif low in _TO_FIRST:
        out = _TO_FIRST[low]
    elif (
        low in _MODALS or low in _PAST or not low.endswith("s") or low.endswith(("ss", "us", "is"))
    ):
        return verb
    elif low.endswith("ies") and len(low) > 4:
        out = low[:-3] + "y"
    elif low.endswith(("ches", "shes", "sses", "xes", "zes", "oes")):
        out = low[:-2]
    else:
        out = low[:-1]
    return out.capitalize() if verb[:1].isupper() else out


def _agree(text: str, source: int, target: int, object_follows: bool) -> str:
    """Make the verb at the head of `text` agree with a subject that changed person, and the
    verbs coordinated with it ("draws a knife and steps forward")."""
    if source == target:
        return text
    pos = 0
    for _ in range(4):
        m = _NEXT_WORD.match(text, pos)
        if m is None:
            return text
        word = m.group(2)
        if is_adverb(word):
            pos = m.end()
            continue

        def change(verb: str) -> str:
            return _third_person(verb) if target == _THIRD else _first_person(verb, source)

        changed = change(word)
        if changed == word:
            return text  # a modal or a past: the verbs coordinated with it keep their form too
        text = text[: m.start(2)] + changed + text[m.end(2) :]
        return coordinated_agree(text, m.start(2) + len(changed), change, object_follows)
    return text


def _role_of(words: str | None, after: str, opens_clause: bool) -> tuple[int, int]:
    """(grammatical role, person the original verb agreed with) for a tag's words."""
    low = (words or "").strip().lower()
    found = _PRONOUN_ROLES.get(low)
    if found is not None:
        return found
    if low == "her":
        nxt = _NEXT_WORD.match(after)
        if nxt is not None and nxt.group(2).lower() not in _NOT_A_NOUN:
            return _POSSESSIVE, _THIRD
        return _OBJECT, _THIRD
    if low == "his":
        nxt = _NEXT_WORD.match(after)
        return (
            _POSSESSIVE
            if nxt is not None and nxt.group(2).lower() not in _NOT_A_NOUN
            else _INDEPENDENT
        ), _THIRD
    if low.endswith(("'s", "’s")):
        return _POSSESSIVE, _THIRD
    if low == "you":
        return (_SUBJECT if opens_clause else _OBJECT), _PLURAL
    return (_SUBJECT if opens_clause else _OBJECT), _THIRD


def _opens_clause(before: str, at_start: bool) -> bool:
    stripped = before.rstrip()
    if not stripped:
        return at_start
    if stripped[-1] in ".!?;:'\"“”‘’()[]—–-":
        return True
    return stripped.rsplit(None, 1)[-1].strip(",").lower() in _CLAUSE_OPENERS


def _ends_sentence(text: str) -> bool:
    stripped = text.rstrip()
    if len(stripped) == len(text):
        return False
    if stripped[-1:] in "'’)":
        stripped = stripped[:-1]
    return stripped[-1:] in (".", "!", "?")


# How one tag reads: (first-person word, suffix after an alias, capitalise the alias, the
# following text when the reader is the one tagged, the following text otherwise, and the
# pronoun others read instead of the alias, if any).
TagForms = tuple[str, str, bool, str, str, str | None]

_THIRD_PERSON_REFLEXIVES = frozenset(["himself", "herself", "itself", "themselves", "themself"])
_REFLEXIVE_BY_PRONOUN = {
    "he": "himself",
    "him": "himself",
    "his": "himself",
    "she": "herself",
    "her": "herself",
    "hers": "herself",
    "it": "itself",
    "its": "itself",
}


def _reflexive_for_others(
    i: int, texts: Sequence[str], words: Sequence[str | None], ids: Sequence[str]
) -> str | None:
    """A reflexive tag whose entity is already named earlier in its sentence reads as a
    reflexive pronoun ("sits by himself"), not as the alias again ("sits by the hooded
    figure"). Which one: the author's own if it is third person, else the one the entity's
    other pronouns in the content imply, else "themselves" (a first-person author's "myself"
    says nothing of who they are)."""
    antecedents = []
    for j in range(i - 1, -1, -1):
        if any(mark in texts[j + 1] for mark in ".!?"):
            break
        if ids[j] == ids[i]:
            antecedents.append((words[j] or "").strip().lower())
    if not antecedents or not ids[i]:
        return None
    own = (words[i] or "").strip().lower()
    if own in _THIRD_PERSON_REFLEXIVES:
        return own
    for antecedent in antecedents:
        if antecedent in _REFLEXIVE_BY_PRONOUN:
            return _REFLEXIVE_BY_PRONOUN[antecedent]
    return "themselves"


def forms_around_tags(
    texts: Sequence[str], words: Sequence[str | None], ids: Sequence[str]
) -> list[TagForms]:
    """The forms of each of n tags, given the n + 1 stretches of text around them, the
    words each tag was written with (None for a tag without words) and whom each names."""
    n = len(words)
    # A tag joined to its neighbour by "and"/"or"/"," shares its neighbour's role, and a
    # compound subject keeps its plural verb.
    chained = [i > 0 and _CONJUNCTION.fullmatch(texts[i]) is not None for i in range(n + 1)]
    forms: list[TagForms] = []
    head_of_chain = 0
    for i, tag_words in enumerate(words):
        if not chained[i]:
            head_of_chain = i
        after = texts[i + 1]
        opens = _opens_clause(texts[head_of_chain], head_of_chain == 0)
        role, source = _role_of(tag_words, after, opens)
        possessive_mark = _POSSESSIVE_MARK.match(after)
        if possessive_mark is not None and role in (_SUBJECT, _OBJECT):
            role, after = _POSSESSIVE, after[possessive_mark.end() :]
        after_self = after_other = after
        if role == _SUBJECT and not chained[i] and not chained[i + 1]:
            object_follows = i + 1 < n
            after_self = _agree(after, source, _FIRST, object_follows)
            contraction = _FIRST_PERSON_CONTRACTION.match(after) if source == _FIRST else None
            if contraction is not None:
                after_other = (
                    _CONTRACTION_TO_THIRD[contraction.group(1)] + after[contraction.end() :]
                )
            else:
                after_other = _agree(after, source, _THIRD, object_follows)
        forms.append(
            (
                _FIRST_PERSON[role],
                "'s" if role in (_POSSESSIVE, _INDEPENDENT) else "",
                _ends_sentence(texts[i]),
                after_self,
                after_other,
                _reflexive_for_others(i, texts, words, ids) if role == _REFLEXIVE else None,
            )
        )
    return forms


def _words(text: str) -> list[str]:
    return re.findall(r"[^\W_]+", text.lower())


# Every word these rules write that the content they rewrite need not hold (an irregular
# form, a first-person or reflexive word, the "'s" after an alias): a search of the stored
# text cannot expect to find them there (memory.engine.buffer.words).
WRITTEN_WORDS = frozenset(
    word
    for text in (
        *_FIRST_PERSON,
        *_TO_THIRD.values(),
        *_TO_FIRST.values(),
        *_PLURAL_TO_FIRST.values(),
        *_CONTRACTION_TO_THIRD.values(),
        *_THIRD_PERSON_REFLEXIVES,
        *_REFLEXIVE_BY_PRONOUN.values(),
        "themselves",
        "'s",
    )
    for word in _words(text)
)
