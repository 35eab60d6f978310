"""The `entity@<id>[words]` tags of a v2 `content`, malformed ones included: the one tag
scanner, used by hydrate, by the untagged first-person pass and by the long-term delivery
probe, so none of them can disagree about where a tag is.
"""

from __future__ import annotations

import re

_PREFIX = "entity@"
# An id written before `[words]` runs to the bracket; a bare one (no words) stops at what reads
# as the end of a word ("look at entity@bob." names bob).
_BRACKET_ID = re.compile(r"[^\s\[\]@]*(?=\[)")
_BARE_ID = re.compile(r"[\w-]+(?:[.:][\w-]+)*")
_BRACKET = re.compile(r"[\[\]]")


class Tag:
    """One `entity@` tag in a content: where it stands, whom it names ("" for nobody), and the
    words it was written with (None for a bare tag)."""

    __slots__ = ("start", "end", "id", "words")

    def __init__(self, start: int, end: int, id_: str, words: str | None) -> None:
        self.start, self.end, self.id, self.words = start, end, id_, words


def _words_at(content: str, opening: int) -> tuple[str, int]:
    """(words, end) of the bracket at `opening`, brackets nested inside; a bracket never
    closed takes the rest of the content as its words."""
    depth = 0
    for m in _BRACKET.finditer(content, opening):
        depth += 1 if m.group() == "[" else -1
        if depth == 0:
            return content[opening + 1 : m.start()], m.end()
    return content[opening + 1 :], len(content)


def _tag_at(content: str, start: int) -> Tag:
    """The tag at `start`, malformed ones included. Upstream's dehydrate bug writes one tag
    inside another's id (`entity@entity@bob[bob][the entity@bob[bob]]`): the innermost id is
    who is meant, and each repeated prefix owns one more bracket of words, so the whole run
    is one tag. Words are bracket-balanced and an unclosed `[` takes the rest of the content,
    so no word the author wrote for a tag ever reaches the line."""
    pos, levels = start, 0
    while content.startswith(_PREFIX, pos):
        pos += len(_PREFIX)
        levels += 1
    m = _BRACKET_ID.match(content, pos) or _BARE_ID.match(content, pos)
    id_, end = (m.group(), m.end()) if m else ("", pos)
    words = None
    for _ in range(levels):
        if not content.startswith("[", end):
            break
        words, end = _words_at(content, end)
    return Tag(start, end, id_, words)


# The tag as omnia writes it: one prefix, an id, words with no bracket inside. For such a tag
# `_tag_at` finds exactly this (one level, the id up to the bracket, the words up to the first
# closing bracket), so one match reads it; anything else (nested, bare, unclosed) is walked.
_PLAIN_TAG = re.compile(r"entity@([^\s\[\]@]*)\[([^\[\]]*)\]")


def find_tags(content: str) -> list[Tag]:
    """Every tag of `content`, in order. The one tag scanner: anything else that looks for
    tags (the long-term delivery probe) uses it, so it cannot disagree with hydrate."""
    tags: list[Tag] = []
    pos = content.find(_PREFIX)
    while pos >= 0:
        plain = _PLAIN_TAG.match(content, pos)
        if plain is not None:
            tag = Tag(pos, plain.end(), plain.group(1), plain.group(2))
        else:
            tag = _tag_at(content, pos)
        tags.append(tag)
        pos = content.find(_PREFIX, tag.end)
    return tags


_INNER_TAG_MARKS = re.compile(r"entity@[^\s\[\]@]*|[\[\]]")


def plain_words(words: str | None) -> str | None:
    """A tag's words with any tag inside them reduced to the words it wraps ("the
    entity@bob[bob]" -> "the bob"), for reading their grammar: no pronoun contains a tag."""
    if words is None or _PREFIX not in words:
        return words
    return _INNER_TAG_MARKS.sub("", words)
