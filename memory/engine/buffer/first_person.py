"""Untagged first-person words in a v2 `content`: later omnia's authors tag most mentions
(`entity@bob[I]`), but not every one ("entity@alice[I] hope my brother is alive", "I hope my
brother is still alive"). Such a word is the actor's; read bare by anyone else it would say
the reader's own brother. So before hydrating, each one outside quoted speech becomes a tag
for the actor, and reads "the traveller's brother" for everyone but the actor.
"""

from __future__ import annotations

import re
from functools import lru_cache

from memory.engine.buffer.tags import find_tags

# "I" only as a capital (I'm and I'll included); "mine" not after a determiner ("the mine",
# "a gold mine" are places).
_FIRST_PERSON = re.compile(
    r"(?<![\w'’@\[-])(?:I|[Mm]e|[Mm]y|[Mm]yself|(?<!the )(?<!a )(?<!gold )[Mm]ine)(?![\w-])"
)
# What the author says aloud or quotes stays theirs: "I" inside speech is the speaker's.
_QUOTED = re.compile(r"\"[^\"]*\"?|“[^”]*”?|‘[^’]*’?|(?<![\w])'[^']*'(?![\w])")
_ID_THAT_TAGS = re.compile(r"[^\s\[\]@]+")


@lru_cache(maxsize=16384)
def tag_untagged_first_person(content: str, actor: str) -> str:
    """`content` with each first-person word outside quotes and tags tagged for `actor`."""
    if not _ID_THAT_TAGS.fullmatch(actor) or _FIRST_PERSON.search(content) is None:
        return content
    skip = [(m.start(), m.end()) for m in _QUOTED.finditer(content)]
    skip.extend((tag.start, tag.end) for tag in find_tags(content))
    out, pos = [], 0
    for m in _FIRST_PERSON.finditer(content):
        if any(start <= m.start() < end for start, end in skip):
            continue
        out.append(content[pos : m.start()])
        out.append(f"entity@{actor}[{m.group()}]")
        pos = m.end()
    out.append(content[pos:])
    return "".join(out)
