"""Later omnia's `hydrate` (v2 intents: `content` with `entity@<id>[words]` tags), minus its
bugs: every tag becomes the viewer's alias, or a first-person form when the viewer is the one
tagged, and a first-person verb follows its subject into the third person ("I say" -> "Gareth
says"). The grammar of that lives in `memory.engine.buffer.grammar`; this module finds the
tags and puts each viewer's words in them.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from memory.engine.aliases import UNFAMILIAR, AliasHolder
from memory.engine.buffer.entry import Undeliverable, outcome_suffix
from memory.engine.buffer.grammar import forms_around_tags

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


def _closing(content: str, opening: int) -> int:
    """Just past the `]` that closes the `[` at `opening`, brackets nested; the end of the
    content when it is never closed (the rest of it is then the tag's words)."""
    depth = 0
    for m in _BRACKET.finditer(content, opening):
        depth += 1 if m.group() == "[" else -1
        if depth == 0:
            return m.end()
    return len(content)


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
        close = _closing(content, end)
        words = content[end + 1 : close - 1 if content.endswith("]", 0, close) else close]
        end = close
    return Tag(start, end, id_, words)


def find_tags(content: str) -> list[Tag]:
    """Every tag of `content`, in order. The one tag scanner: anything else that looks for
    tags (the long-term delivery probe) uses it, so it cannot disagree with hydrate."""
    tags: list[Tag] = []
    pos = content.find(_PREFIX)
    while pos >= 0:
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


def entity_tag_ids(content: str) -> list[str]:
    """The ids `content` tags, once each, in order of first appearance (innermost id of a
    nested tag)."""
    seen: dict[str, None] = {}
    for tag in find_tags(content):
        if tag.id:
            seen.setdefault(tag.id)
    return list(seen)


# One slot per tag: (id, first-person word, suffix after an alias, capitalise the alias,
# the following text when the viewer is the one tagged, the following text otherwise).
_Slot = tuple[str, str, str, bool, str, str]


@lru_cache(maxsize=16384)
def _compile(content: str) -> tuple[str, tuple[_Slot, ...]]:
    """Everything about a `content` that does not depend on who reads it, worked out once:
    the same event sits in every witness's buffer, so a page renders each content many times."""
    tags = find_tags(content)
    texts = [content[: tags[0].start]]
    texts.extend(content[a.end : b.start] for a, b in zip(tags, tags[1:], strict=False))
    texts.append(content[tags[-1].end :])
    forms = forms_around_tags(texts, [tag.words for tag in tags])
    return texts[0], tuple((tag.id, *form) for tag, form in zip(tags, forms, strict=True))


def hydrate(content: str, viewer: AliasHolder) -> str:
    """A v2 `content` as `viewer` reads it: tags become aliases or first-person words, double
    quotes become single ones (as upstream writes them), and the first letter is capitalised."""
    if '"' in content:
        content = content.replace('"', "'")
    if "entity@" not in content:
        return content[:1].upper() + content[1:]
    head, slots = _compile(content)
    aliases = viewer.aliases
    me = viewer.id
    out = [head]
    for id_, first_person, suffix, sentence_start, after_self, after_other in slots:
        if id_ == me:
            out.append(first_person)
            out.append(after_self)
            continue
        label = aliases.get(id_)
        if label is None:
            label = UNFAMILIAR
        if sentence_start and label[:1].islower():
            label = label[0].upper() + label[1:]
        out.append(label)
        out.append(suffix)
        out.append(after_other)
    line = "".join(out)
    return line[:1].upper() + line[1:]


def render_v2(intent: dict[str, Any], outcome: object, viewer: AliasHolder) -> str:
    kind = intent.get("type")
    if kind not in ("dialogue", "action", "monologue", "thought"):
        raise Undeliverable(f"unknown v2 intent type {kind!r}")
    if type(intent.get("actorId")) is not str:
        raise Undeliverable("intent has no string actorId")
    content = intent["content"]
    if type(content) is not str:
        raise Undeliverable("v2 intent content is not a string")
    line = hydrate(content, viewer)
    if kind == "dialogue":
        return line
    return line + outcome_suffix(outcome)
