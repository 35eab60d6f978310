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

# `entity@<id>[words]`; a repeated prefix is upstream's dehydrate bug
# (`entity@entity@bob[bob][the hooded figure]`), and a tag without words still names an id.
_TAG = re.compile(
    r"(?P<pre>(?:entity@)+)(?:(?P<id>[^\s\[\]@]*)\[(?P<words>[^\[\]]*)\]|(?P<bare>[\w-]+(?:[.:][\w-]+)*)?)"
)
_EXTRA_WORDS = re.compile(r"\[([^\[\]]*)\]")


class Tag:
    """One `entity@` tag in a content: where it stands, whom it names ("" for nobody), and the
    words it was written with (None for a bare tag)."""

    __slots__ = ("start", "end", "id", "words")

    def __init__(self, start: int, end: int, id_: str, words: str | None) -> None:
        self.start, self.end, self.id, self.words = start, end, id_, words


def find_tags(content: str) -> list[Tag]:
    """Every tag of `content`, in order. The one tag scanner: anything else that looks for
    tags (the long-term delivery probe) uses it, so it cannot disagree with hydrate."""
    tags: list[Tag] = []
    pos = 0
    search = _TAG.search
    while (m := search(content, pos)) is not None:
        end = m.end()
        words = m.group("words")
        if words is None:
            id_ = m.group("bare") or ""
        else:
            id_ = m.group("id")
            # The dehydrate bug nests one tag per repeated prefix; the outermost words are the
            # ones the author wrote, the innermost id is who they meant.
            for _ in range(m.group("pre").count("entity@") - 1):
                extra = _EXTRA_WORDS.match(content, end)
                if extra is None:
                    break
                words, end = extra.group(1), extra.end()
        tags.append(Tag(m.start(), end, id_, words))
        pos = end if end > m.start() else end + 1
    return tags


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
