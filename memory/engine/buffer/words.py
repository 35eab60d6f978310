"""Searching a viewer's lines by their words, and what such a search may ask of the text index.

`q` is a word search: each word of the query (a run of letters or digits, lowercased) must
begin a word of the line as the viewer reads it; a line that cannot be shown is searched in
the text its row stores. "ferr" finds "the ferry", "ferry rope" finds the lines holding both
words, "erry" finds neither.

The text index (memory/migrations/0019) holds each row's stored words. A line is made of them
and of words the renderer writes itself: the viewer's alias for each id the row names, the
first-person words of a tag, a verb agreeing with its new subject, a v1 line's clock, the
outcome. `index_term` says, for one query word, which stored words a row whose line holds
that word must have. It promises never to leave such a row out; where it cannot promise that
(a word the renderer may write from nothing the row stores, a name too many entities share)
it says None, and the search reads the rows in order instead.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from memory.engine.aliases import SELF, UNFAMILIAR
from memory.engine.buffer.as_omnia import THIRD_PERSON
from memory.engine.buffer.grammar import WRITTEN_WORDS
from memory.engine.buffer.jsdate import INVALID_DATE

_WORD = re.compile(r"[^\W_]+")
# A name that many entities share says little: past this many, a word is searched in order.
MAX_IDS = 64
# A query word longer than this is searched in order: a term's prefixes grow with the square
# of its length (each cut of the word, glued to a tag), and a 10,000-letter query made a regex
# of 50 MB per request, which Python's regex cache then kept.
MAX_TERM_CHARS = 40


def words_of(text: str) -> list[str]:
    """The words of `text` as a search compares them: runs of letters or digits, lowercased."""
    return _WORD.findall(text.lower())


def query_words(q: str | None) -> tuple[str, ...]:
    return tuple(dict.fromkeys(words_of(q or "")))


def searched_text(
    line: str | None, intent_json: str, outcome_json: str | None, corrected: str | None = None
) -> str:
    """What a search reads of a row: its line in both readings (omnia's and, where it
    differs, the corrected one: a search finds a line by the words of either), or the stored
    text of a line that cannot be shown (the same text the index holds)."""
    if line is None:
        return f"{intent_json} {outcome_json or ''}"
    return line if corrected is None or corrected == line else f"{line}\n{corrected}"


class WordSearch:
    """`matches(text)`: every query word begins a word of `text` (compiled once a query)."""

    def __init__(self, words: Iterable[str]) -> None:
        # A query word is letters and digits: found where no letter or digit stands before
        # it, it begins a word of the text.
        self._patterns = [re.compile(r"(?<![^\W_])" + re.escape(w)) for w in words]

    def matches(self, text: str) -> bool:
        low = text.lower()
        return all(p.search(low) for p in self._patterns)


# Words a line may show that no stored row holds: the renderer's own. A query word that
# begins one of them could be in any line.
RENDERER_WORDS = WRITTEN_WORDS | frozenset(
    words_of(
        " ".join(
            [
                UNFAMILIAR,  # an alias the viewer does not have
                SELF,  # v1's "you"
                "spoke to someone",  # v1 dialogue
                "AM PM",
                INVALID_DATE,  # v1's clock
                "Outcome: Succeeded Failed",
            ]
        )
    )
)
# The last word of what a tag prints, to which the text after the tag may be joined
# ("entity@bob[Bob]ish" reads "Garethish"): beside the aliases, these, and the third-person
# pronouns omnia's reading prints as written ("entity@bob[her]ish" reads "Herish").
_TAG_TAILS = WRITTEN_WORDS | THIRD_PERSON | frozenset(words_of(UNFAMILIAR))
_MENTION = "entity"  # what a tag's words start with in the stored text ("xentity@bob[…]")


@dataclass(frozen=True)
class IndexTerm:
    """What a row must hold for its line to hold one query word: any of these stored words
    (`prefixes` begin one, `words` are one), or all the words of one of `ids`."""

    prefixes: frozenset[str] = frozenset()
    words: frozenset[str] = frozenset()
    ids: frozenset[tuple[str, ...]] = field(default_factory=frozenset)

    def __or__(self, other: IndexTerm) -> IndexTerm:
        return IndexTerm(
            self.prefixes | other.prefixes, self.words | other.words, self.ids | other.ids
        )


def id_words(entity_id: str) -> tuple[str, ...] | None:
    """An id as the index holds it (its words, all of which a row naming it has), or None
    when that cannot be told from here (letters outside ASCII, or no letter at all)."""
    found = words_of(entity_id)
    return tuple(found) if entity_id.isascii() and found else None


def _agreement_sources(word: str) -> set[str]:
    """Stored verbs from which subject agreement (memory.engine.buffer.grammar) writes a word
    beginning with `word` that no stored word begins with: "walks" from "walk", "wishes"
    from "wish", "tries" from "try", and "try" from "tries". Every other form it writes is a
    stored word cut short, or one of WRITTEN_WORDS."""
    found = set()
    if word.endswith("s"):
        found.add(word[:-1])
    if word.endswith("e"):
        found.add(word[:-1])
    if word.endswith("es"):
        found.add(word[:-2])
    for ending in ("i", "ie", "ies"):
        if word.endswith(ending):
            found.add(word[: -len(ending)] + "y")
    if word.endswith("y"):
        found.add(word[:-1] + "ies")
    return {w for w in found if w}


class TermPlanner:
    """Index terms for one viewer's query words (its aliases read once)."""

    def __init__(self, viewer_id: str, aliases: Mapping[str, str]) -> None:
        self.named: dict[str, set[str]] = {}  # a word of an alias -> the ids it names
        tails = set()
        for entity_id, label in aliases.items():
            if entity_id == viewer_id:  # the viewer reads itself as "I" or "you", never an alias
                continue
            words = words_of(label)
            for word in words:
                self.named.setdefault(word, set()).add(entity_id)
            tails.update(words[-1:])
        self.tails = _TAG_TAILS | tails
        self._memo: dict[str, IndexTerm | None] = {}

    @classmethod
    def for_many(cls, alias_maps: Iterable[Mapping[str, str]]) -> TermPlanner:
        """Terms for words any of many viewers may read (a search across a save): every
        alias any of them uses names its ids, each viewer's own included (a superset: the
        index may hand over a few rows more, never one fewer)."""
        planner = cls("", {})
        tails = set()
        for aliases in alias_maps:
            for entity_id, label in aliases.items():
                words = words_of(label)
                for word in words:
                    planner.named.setdefault(word, set()).add(entity_id)
                tails.update(words[-1:])
        planner.tails = planner.tails | tails
        return planner

    def term(self, word: str) -> IndexTerm | None:
        if word not in self._memo:
            self._memo[word] = self._term(word)
        return self._memo[word]

    def _term(self, word: str) -> IndexTerm | None:
        if len(word) > MAX_TERM_CHARS or not word.isascii():
            return None
        if word.isdigit() and len(word) <= 2:  # a v1 clock's digits
            return None
        if any(w.startswith(word) for w in RENDERER_WORDS):
            return None
        named = set()
        for alias_word, entity_ids in self.named.items():
            if alias_word.startswith(word):
                named |= entity_ids
        if len(named) > MAX_IDS:
            return None
        ids = {id_words(entity_id) for entity_id in named}
        if None in ids:
            return None
        # Text written against a tag joins what the tag prints: before it, the stored word
        # is the text (or the verb it agreed from) with "entity" after it; after it, the word
        # goes on past the tag's last word, into the text (or the next tag) that follows.
        sources = _agreement_sources(word)
        glued = {s + _MENTION for s in sources}
        for i in range(1, len(word)):
            glued |= {s + _MENTION for s in {word[:i], *_agreement_sources(word[:i])}}
        term = IndexTerm(frozenset({word}), frozenset(sources | glued), frozenset(ids))
        for i in range(1, len(word)):
            if word[:i] in self.tails:
                rest = self.term(word[i:])
                if rest is None:
                    return None
                term = term | rest
        return term


class StoredWords:
    """What the index would answer for one row, asked of its stored text in Python: whether
    it may hold every term. Plain substrings (a word that begins a word of the text is in
    it), so a few microseconds a row against tens for rendering it: a page that reads rows
    in order (the index could not narrow them, or a word was too common to look up) renders
    only the rows that pass."""

    def __init__(self, terms: Iterable[IndexTerm]) -> None:
        self._checks = []
        for term in terms:
            starts = _any_of(term.prefixes | term.words)
            # A row holding every word of an id holds its longest: one search finds the few
            # rows worth looking at word by word.
            longest = _any_of({max(words, key=len) for words in term.ids})
            self._checks.append((starts, longest, term.ids))

    def hold(self, intent_json: object, outcome_json: object) -> bool:
        if type(intent_json) is not str or type(outcome_json) not in (str, type(None)):
            return True  # a poison row: rendered, and shown as what it is
        text = f"{intent_json} {outcome_json or ''}".lower()
        for starts, longest, ids in self._checks:
            if starts is not None and starts.search(text):
                continue
            if longest is None or not longest.search(text):
                return False
            if not any(all(w in text for w in words) for words in ids):
                return False
        return True


def _any_of(needles: Iterable[str]) -> re.Pattern | None:
    found = sorted(needles)
    return re.compile("|".join(map(re.escape, found))) if found else None


def uses_term(entity_id: str) -> IndexTerm | None:
    """A row that names `entity_id` (as actor or target) holds its words."""
    mention = id_words(entity_id)
    return None if mention is None else IndexTerm(ids=frozenset({mention}))


def types_term(types: Iterable[str]) -> IndexTerm | None:
    """A row of one of `types` holds the type's word (its intent's `"type"`)."""
    words = set()
    for kind in types:
        if not kind.isascii() or words_of(kind) != [kind.lower()]:
            return None
        words.add(kind.lower())
    return IndexTerm(words=frozenset(words)) if words else None


def json_mention(entity_id: str) -> str | None:
    """How `entity_id` stands in an intent's JSON as a string, where that is certain: ids of
    plain printable ASCII (every writer spells those alike; others may be escaped)."""
    if entity_id.isascii() and entity_id.isprintable() and not set(entity_id) & set('"\\/'):
        return f'"{entity_id}"'
    return None
