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
from memory.engine.buffer.entry import outcome_suffix, v2_parts
from memory.engine.buffer.first_person import tag_untagged_first_person
from memory.engine.buffer.grammar import forms_around_tags
from memory.engine.buffer.tags import Tag, find_tags, plain_words

__all__ = ["Tag", "entity_tag_ids", "find_tags", "hydrate", "render_v2"]


def entity_tag_ids(content: str) -> list[str]:
    """The ids `content` tags, once each, in order of first appearance (innermost id of a
    nested tag)."""
    seen: dict[str, None] = {}
    for tag in find_tags(content):
        if tag.id:
            seen.setdefault(tag.id)
    return list(seen)


# One slot per tag: (id, first-person word, suffix after an alias, capitalise the alias,
# the following text when the viewer is the one tagged, the following text otherwise, the
# pronoun others read instead of the alias).
_Slot = tuple[str, str, str, bool, str, str, str | None]
# A stored label may be a capitalised descriptor ("The hooded figure"); mid-sentence its
# article is lowered. Nothing else is: "Gareth" or "Old Tom" is a name wherever it stands.
_LEADING_ARTICLE = re.compile(r"(?:The|A|An) ")


@lru_cache(maxsize=16384)
def _compile(content: str) -> tuple[str, tuple[_Slot, ...]]:
    """Everything about a `content` that does not depend on who reads it, worked out once:
    the same event sits in every witness's buffer, so a page renders each content many times."""
    tags = find_tags(content)
    texts = [content[: tags[0].start]]
    texts.extend(content[a.end : b.start] for a, b in zip(tags, tags[1:], strict=False))
    texts.append(content[tags[-1].end :])
    forms = forms_around_tags(
        texts, [plain_words(tag.words) for tag in tags], [tag.id for tag in tags]
    )
    return texts[0], tuple((tag.id, *form) for tag, form in zip(tags, forms, strict=True))


def hydrate(content: str, viewer: AliasHolder, actor: str | None = None) -> str:
    """A v2 `content` as `viewer` reads it: tags become aliases or first-person words, double
    quotes become single ones (as upstream writes them), and the first letter is capitalised.
    Given the `actor` who wrote it, an untagged "I" or "my" is the actor's for other readers."""
    if actor is not None and actor != viewer.id:
        content = tag_untagged_first_person(content, actor)
    if '"' in content:
        content = content.replace('"', "'")
    if "entity@" not in content:
        return content[:1].upper() + content[1:]
    head, slots = _compile(content)
    aliases = viewer.aliases
    me = viewer.id
    out = [head]
    for id_, first_person, suffix, sentence_start, after_self, after_other, pronoun in slots:
        if id_ == me:
            out.append(first_person.capitalize() if sentence_start else first_person)
            out.append(after_self)
            continue
        if pronoun is not None:
            out.append(pronoun)
            out.append(after_other)
            continue
        label = aliases.get(id_)
        if label is None:
            label = UNFAMILIAR
        if sentence_start:
            if label[:1].islower():
                label = label[0].upper() + label[1:]
        elif _LEADING_ARTICLE.match(label):
            label = label[0].lower() + label[1:]
        out.append(label)
        out.append(suffix)
        out.append(after_other)
    line = "".join(out)
    return line[:1].upper() + line[1:]


def render_v2(intent: dict[str, Any], outcome: object, viewer: AliasHolder) -> str:
    kind, actor, content = v2_parts(intent)
    line = hydrate(content, viewer, actor)
    if kind == "dialogue":
        return line
    return line + outcome_suffix(outcome)
