"""Where omnia's reading of a line goes wrong, as named flaws (issue 30): each a span of the
line as omnia rendered it, what kind of wrong it is, and what the corrected reading says there.

The two readings are compared word by word (a raw tag is one word however many spaces its
hydrated id holds), and each run that differs is one flaw:
- `raw_tag`: system syntax left in the prompt, `entity@<something>[words]`, as omnia's nested
  tag bug leaves it;
- `unresolved_tag`: an `entity@` with no bracketed words after it, so no reader resolved it;
- `unheld_label`: omnia kept the writer's words for someone ("him", "her") where the viewer
  holds a label of its own;
- `grammar`: the rest, a difference of person, number or case ("wills", "to my", "Gareth
  and I", "Says" for an actor whose label is empty).
Raw and unresolved tags are leaks of system syntax; the others are quieter (a line a narrative
designer wants to see, not a secret told).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

from memory.engine.buffer.as_omnia import THIRD_PERSON as _THIRD_PERSON

FlawKind = Literal["raw_tag", "unresolved_tag", "unheld_label", "grammar"]
FLAW_KINDS: tuple[FlawKind, ...] = ("raw_tag", "unresolved_tag", "unheld_label", "grammar")
# The kinds that show system syntax to the model: findings of the leak report.
TAG_FLAWS: frozenset[str] = frozenset({"raw_tag", "unresolved_tag"})

# A raw tag (its hydrated "id" may hold spaces: "entity@the hooded figure[…]"), and any
# `entity@` at all. omnia upper-cases a line's first letter, so one may read "Entity@".
RAW_TAG = re.compile(r"[Ee]ntity@[^\[\]\n]*?\[[^\]\n]*\]")
ANY_TAG = re.compile(rf"{RAW_TAG.pattern}|[Ee]ntity@\S*")
# A word: a raw tag whole, else a run of non-space characters.
_WORD = re.compile(rf"{RAW_TAG.pattern}|\S+")


@dataclass(frozen=True)
class Flaw:
    kind: FlawKind
    start: int  # offsets into omnia's line
    end: int
    text: str  # omnia's words there
    corrected: str  # what the corrected reading says instead

    def to_dict(self) -> dict[str, object]:
        return {
            "kind": self.kind,
            "start": self.start,
            "end": self.end,
            "text": self.text,
            "corrected": self.corrected,
        }


def _kind(text: str) -> FlawKind:
    if RAW_TAG.search(text):
        return "raw_tag"
    if ANY_TAG.search(text):
        return "unresolved_tag"
    words = re.findall(r"[A-Za-z]+", text.lower())
    if words and all(w in _THIRD_PERSON for w in words):
        return "unheld_label"
    return "grammar"


@lru_cache(maxsize=16384)
def line_flaws(omnia: str | None, corrected: str | None) -> tuple[Flaw, ...]:
    """The flaws of omnia's line against the corrected one; none when they are equal. A line
    that still holds a tag is flawed even where the corrected line happens to agree."""
    if omnia is None or corrected is None:
        return ()
    if omnia == corrected:
        return _tag_flaws(omnia, ())
    a = _words(omnia)
    b = [w for *_, w in _words(corrected)]
    flaws: list[Flaw] = []
    for i1, i2, j1, j2 in differing_runs([w for *_, w in a], b):
        if i1 < i2:
            start, end = a[i1][0], a[i2 - 1][1]
        else:  # the corrected line has words omnia lacks: a point where they are missing
            start = end = a[i1][0] if i1 < len(a) else len(omnia)
        text = omnia[start:end]
        flaws.append(Flaw(_kind(text), start, end, text, " ".join(b[j1:j2])))
    return _tag_flaws(omnia, tuple(flaws))


def _words(line: str) -> list[tuple[int, int, str]]:
    """(start, end, word) of each word of a line: `_WORD`'s matches. A line with no tag in it
    (most lines) is split on white space, as `\\S+` would be (str.isspace and the pattern's
    `\\s` agree on every character), in two thirds of the regex's time."""
    if "ntity@" in line:
        return [(m.start(), m.end(), m.group()) for m in _WORD.finditer(line)]
    words, at = [], 0
    for word in line.split():
        at = line.index(word, at)
        words.append((at, at + len(word), word))
        at += len(word)
    return words


def _tag_flaws(omnia: str, flaws: tuple[Flaw, ...]) -> tuple[Flaw, ...]:
    covered = [(f.start, f.end) for f in flaws if f.kind in TAG_FLAWS]
    extra = [
        Flaw(_kind(m.group()), m.start(), m.end(), m.group(), "")
        for m in ANY_TAG.finditer(omnia)
        if not any(s <= m.start() < e for s, e in covered)
    ]
    if not extra:
        return flaws
    return tuple(sorted((*flaws, *extra), key=lambda f: (f.start, f.end)))


def differing_runs(a: list[str], b: list[str]) -> list[tuple[int, int, int, int]]:
    """(i1, i2, j1, j2) of each run where `a` and `b` differ, in order: the opcodes other than
    "equal" of difflib.SequenceMatcher(None, a, b, autojunk=False), by its own algorithm (the
    longest matching block, earliest in `a` then in `b`, then the same on either side), with
    what a matcher without junk never uses left out. The leak rescan diffs every recent line
    of every viewer (100,000 at 2,000 viewers); this is half the time difflib's general one
    takes. A property test holds the two equal."""
    b2j: dict[str, list[int]] = {}
    for j, word in enumerate(b):
        b2j.setdefault(word, []).append(j)
    blocks = []
    queue = [(0, len(a), 0, len(b))]
    while queue:
        alo, ahi, blo, bhi = queue.pop()
        besti, bestj, bestsize = alo, blo, 0
        j2len: dict[int, int] = {}
        for i in range(alo, ahi):
            longer: dict[int, int] = {}
            for j in b2j.get(a[i], ()):
                if j < blo:
                    continue
                if j >= bhi:
                    break
                k = longer[j] = j2len.get(j - 1, 0) + 1
                if k > bestsize:
                    besti, bestj, bestsize = i - k + 1, j - k + 1, k
            j2len = longer
        if bestsize:
            blocks.append((besti, bestj, bestsize))
            if alo < besti and blo < bestj:
                queue.append((alo, besti, blo, bestj))
            if besti + bestsize < ahi and bestj + bestsize < bhi:
                queue.append((besti + bestsize, ahi, bestj + bestsize, bhi))
    blocks.sort()
    blocks.append((len(a), len(b), 0))
    runs = []
    i = j = 0
    for ai, bj, size in blocks:
        if i < ai or j < bj:
            runs.append((i, ai, j, bj))
        i, j = ai + size, bj + size
    return runs
