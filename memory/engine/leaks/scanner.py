"""Epistemic leak scanner (PRODUCT §7): what a viewer's text names that the viewer must not know.

A finding is a whole-token occurrence, in a text rendered for viewer V, of
- a system id of any object (`system_id`),
- the true name of an entity V does not know by that name (`unknown_name`),
- the value of a PRIVATE attribute V has no access to (`private_attribute`).

One Aho-Corasick automaton holds every pattern of the world and serves every viewer: what is a
leak depends on the viewer only at judging time, so nothing is rebuilt per viewer.

Decisions the spec leaves open, and why:
- Matching is case-insensitive for every pattern, ids included. Upstream's own data writes the
  id `bob` as "Bob" ("Bob greets Charlie"); an exact-case id match would miss that leak.
  Case is folded character by character (`str.lower` of each character), so offsets into the
  folded text are offsets into the original.
- Whole tokens only: the characters just outside a hit must not be word characters (Python's
  `\\w`: alphanumeric or `_`). That is `(?<!\\w)PATTERN(?!\\w)`, which equals `\\bPATTERN\\b`
  whenever the pattern starts and ends with a word character and stays sane when it does not.
- Overlaps: among whole-token hits the longest wins, ties go to the leftmost; a hit
  overlapping a winner is dropped. Then the winners are judged.
- Labels the viewer itself uses shield: a winner overlapped by a whole-token occurrence of one
  of the viewer's own alias labels at least as long is not a finding, so "Captain Voss" (the
  viewer's alias) never yields a leak for the true name "Voss" inside it. Labels are looked
  for only around winners, so they cost nothing on clean text.
- A winner is benign when any of its meanings is legitimate for the viewer: its own true
  name, a true name it knows (alias equals the name, case-insensitively), a private value it
  may see, or a word declared ordinary.
- Readable ids (issue 13 item 10): real saves name an NPC `hale` whose true name is "Hale
  Morrow". An id hit is benign when it stands as whole tokens inside a name the viewer
  legitimately holds for that object (its own true name, the label it uses, a private value
  it may see): Hale's own prompt and a viewer who calls her "Hale Morrow" report nothing.
  Inside the object's true name but unknown to the viewer it is an `unknown_name` finding;
  only an id no name explains ("the-tannery", a UUID, "Bob" for a man named Gareth) is a
  `system_id`. Names are matched case-insensitively, so "hale" written as stored is explained
  alike. Otherwise the most telling meaning is reported: a true name, then an id (the one
  written exactly as stored first), then a private value.
- The viewer enters only at judging time (which hits are benign, which labels shield), so
  one index serves every viewer and nothing is rebuilt when a viewer changes.
- A true name that is also a common word ("Will", "Rose") is flagged wherever the word stands
  alone: a missed leak costs more than a false alarm. `LeakWorld.ordinary_words` silences
  such words (and word-like ids such as a location called `cellar`) deliberately.
- Private values with no letter in them or shorter than three characters are not patterns:
  "85" or "yes" would match every clock and every answer.
- Keys longer than MAX_AUTOMATON_KEY are not put in the automaton: pyahocorasick frees its
  trie recursively, one C stack frame per character of the deepest key, so a key of about a
  million characters (a 1 MB private description) killed the process with SIGSEGV when the
  index was dropped (issue 29). Such keys are few and found with `str.find` on the same fenced
  text, which yields exactly the hits the automaton would.
"""

from __future__ import annotations

import re
import sys
from bisect import bisect_left
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cache, lru_cache
from typing import Literal

import ahocorasick

from memory.engine.aliases import alias_state
from memory.engine.buffer.flaws import ANY_TAG, RAW_TAG
from memory.engine.visibility import PRIVATE, can_see

FindingKind = Literal["system_id", "unknown_name", "private_attribute", "raw_tag", "unresolved_tag"]

MIN_PRIVATE_VALUE_LENGTH = 3
# Far past any name or value a save holds (the longest in the bundled omnia saves is 171
# characters) and far below the ~400,000 where the automaton's recursive free still held.
MAX_AUTOMATON_KEY = 4096


@dataclass(frozen=True)
class PrivateValue:
    object_id: str
    attribute_name: str
    value: str
    allowed: frozenset[str] = frozenset()

    def visible_to(self, viewer_id: str) -> bool:
        return can_see(viewer_id, self.object_id, PRIVATE, self.allowed)


@dataclass(frozen=True)
class LeakWorld:
    object_ids: frozenset[str]
    true_names: Mapping[str, str]
    aliases: Mapping[str, Mapping[str, str]]
    private_values: Sequence[PrivateValue] = ()
    ordinary_words: frozenset[str] = frozenset()
    # (folded word, object id) -> the viewers an allow rule silences it for (EVERY_VIEWER in
    # it: all of them). A rule names the object as well as the word: "keeper" allowed for the
    # id `keeper` says nothing of another object's name that folds alike.
    allowed: Mapping[tuple[str, str], frozenset[str]] = field(default_factory=dict)

    def allows(self, viewer_id: str, finding: Finding) -> bool:
        viewers = self.allowed.get((fold(finding.text), finding.entity_id))
        return viewers is not None and (EVERY_VIEWER in viewers or viewer_id in viewers)


EVERY_VIEWER = ""


@dataclass(frozen=True)
class Finding:
    kind: FindingKind
    start: int
    end: int
    text: str
    entity_id: str
    reason: str
    attribute_name: str | None = None
    likely_description: bool = False

    def to_dict(self) -> dict[str, object]:
        return {
            "kind": self.kind,
            "start": self.start,
            "end": self.end,
            "text": self.text,
            "entity_id": self.entity_id,
            "attribute_name": self.attribute_name,
            "reason": self.reason,
            "likely_description": self.likely_description,
        }


# --- case folding that keeps offsets --------------------------------------------------------


@cache
def _fold_table() -> dict[int, str]:
    # Only characters whose lowercase is a single character: "İ".lower() is two characters
    # and would shift every offset after it.
    table: dict[int, str] = {}
    for code in range(sys.maxunicode + 1):
        char = chr(code)
        low = char.lower()
        if low != char and len(low) == 1:
            table[code] = low
    return table


def fold(text: str) -> str:
    """Lowercase character by character; the result has the length of the input."""
    if text.isascii():
        return text.lower()
    # str.lower() is context-sensitive (a final sigma) and may grow; the table is neither.
    return text.translate(_fold_table())


# --- the patterns ---------------------------------------------------------------------------


@dataclass
class _Pattern:
    """One folded key and every meaning it has in the world."""

    key: str
    ids: list[str] = field(default_factory=list)
    names: list[str] = field(default_factory=list)
    privates: list[PrivateValue] = field(default_factory=list)
    ordinary: bool = False


def _private_is_pattern(value: str) -> bool:
    return len(value) >= MIN_PRIVATE_VALUE_LENGTH and any(c.isalpha() for c in value)


def _collect_patterns(world: LeakWorld) -> list[_Pattern]:
    by_key: dict[str, _Pattern] = {}

    def pattern(text: str) -> _Pattern | None:
        key = fold(text)
        if not key:
            return None
        found = by_key.get(key)
        if found is None:
            found = by_key[key] = _Pattern(key)
        return found

    for object_id in sorted(world.object_ids):
        if (p := pattern(object_id)) is not None:
            p.ids.append(object_id)
    for entity_id, name in sorted(world.true_names.items()):
        if (p := pattern(name.strip())) is not None:
            p.names.append(entity_id)
    for private in world.private_values:
        value = private.value.strip()
        if _private_is_pattern(value) and (p := pattern(value)) is not None:
            p.privates.append(private)
    for word in world.ordinary_words:
        if (p := pattern(word.strip())) is not None:
            p.ordinary = True
    return list(by_key.values())


def _viewer_labels(world: LeakWorld) -> dict[str, tuple[str, ...]]:
    """Each viewer's own alias labels, folded, longest first. A self-alias is never rendered
    (self is always "you"), so it shields nothing."""
    labels: dict[str, tuple[str, ...]] = {}
    for viewer_id, mapping in world.aliases.items():
        keys = {fold(label.strip()) for target, label in mapping.items() if target != viewer_id}
        keys.discard("")
        labels[viewer_id] = tuple(sorted(keys, key=lambda k: (-len(k), k)))
    return labels


@dataclass(frozen=True)
class LeakIndex:
    world: LeakWorld
    patterns: tuple[_Pattern, ...]
    labels: Mapping[str, tuple[str, ...]]
    automaton: ahocorasick.Automaton = field(repr=False)
    privates_of: Mapping[str, tuple[PrivateValue, ...]] = field(default_factory=dict, repr=False)
    # (fenced key, (size, pattern numbers, exact)) for keys past MAX_AUTOMATON_KEY
    long_keys: tuple[tuple[str, tuple[int, tuple[int, ...], bool]], ...] = ()

    @property
    def pattern_count(self) -> int:
        return len(self.patterns)


def build_leak_index(world: LeakWorld) -> LeakIndex:
    patterns = tuple(_collect_patterns(world))
    # Keys are stored masked and fenced (see _fenced): distinct keys may mask alike
    # ("thieves' guild", "thieves, guild"), so an automaton word carries every pattern number.
    groups: dict[str, list[int]] = {}
    for number, p in enumerate(patterns):
        groups.setdefault(_fenced(p.key), []).append(number)
    automaton = ahocorasick.Automaton()
    long_keys = []
    for fenced, numbers in groups.items():
        exact = len(numbers) == 1 and _NON_WORD.search(patterns[numbers[0]].key) is None
        value = (len(fenced), tuple(numbers), exact)
        if len(fenced) > MAX_AUTOMATON_KEY:
            long_keys.append((fenced, value))
        else:
            automaton.add_word(fenced, value)
    if len(automaton):
        automaton.make_automaton()
    privates_of: dict[str, list[PrivateValue]] = {}
    for private in world.private_values:
        privates_of.setdefault(private.object_id, []).append(private)
    return LeakIndex(
        world,
        patterns,
        _viewer_labels(world),
        automaton,
        {object_id: tuple(values) for object_id, values in privates_of.items()},
        tuple(long_keys),
    )


_FENCE = "\x01"
_NON_WORD = re.compile(r"\W")
_ASCII_MASK = bytes(c if chr(c).isalnum() or c == ord("_") else ord(_FENCE) for c in range(256))


def _fenced(folded: str) -> str:
    """Every non-word character becomes one fence character, and fences go around the whole.

    A fenced key can then only match where the key is a whole token (the text is fenced the
    same way), so the automaton itself enforces the boundaries. It is also several times faster
    on this library: inside a word the automaton idles at the root, whose one child is the fence.
    Masking keeps lengths, so offsets survive; a hit is checked against the real key only when
    the key had non-word characters the mask collapsed."""
    if folded.isascii():
        masked = folded.encode("ascii").translate(_ASCII_MASK).decode("ascii")
    else:
        masked = _NON_WORD.sub(_FENCE, folded)
    return _FENCE + masked + _FENCE


# --- scanning -------------------------------------------------------------------------------

Hit = tuple[int, int, int]  # start, end, pattern number


def _is_word(char: str) -> bool:
    return char.isalnum() or char == "_"


_TAG_REASONS = {
    "raw_tag": "system syntax in the prompt: an entity tag omnia's renderer left as it was",
    "unresolved_tag": "system syntax in the prompt: an entity@ no renderer resolved",
}


def tag_findings(text: str, object_ids: frozenset[str] = frozenset()) -> list[Finding]:
    """Raw tags and unresolved `entity@` in a rendered text (issue 30): omnia's own renderer
    leaves them in an NPC's prompt (its nested-tag bug), and that syntax is a leak of its own
    kind whoever reads it. `entity_id` is the id written in the tag when it is one of
    `object_ids`; a half-hydrated tag holds a label there ("entity@Gareth[…]"), not an id."""
    found = []
    for m in ANY_TAG.finditer(text):
        tag = m.group()
        kind: FindingKind = "raw_tag" if RAW_TAG.fullmatch(tag) else "unresolved_tag"
        written = tag[len("entity@") :].split("[", 1)[0]
        entity_id = written if written in object_ids else ""
        found.append(Finding(kind, m.start(), m.end(), tag, entity_id, _TAG_REASONS[kind]))
    return found


def scan_text(index: LeakIndex, viewer_id: str, text: str) -> list[Finding]:
    """Every leak in `text` for `viewer_id`, sorted by start offset."""
    if not index.patterns:
        return []
    folded = fold(text)
    patterns = index.patterns
    hits: list[Hit] = []
    # In the fenced text a hit ending at `end` (inclusive) spans folded[end - size + 1 : end - 1].
    for end, (size, numbers, exact) in _raw_hits(index, _fenced(folded)):
        start, stop = end - size + 1, end - 1
        if exact:
            hits.append((start, stop, numbers[0]))
            continue
        written = folded[start:stop]
        for number in numbers:
            if patterns[number].key == written:
                hits.append((start, stop, number))
                break
    if not hits:
        return []
    labels = index.labels.get(viewer_id, ())

    def shielded(start: int, end: int) -> bool:
        return _shielded_by_find(folded, labels, start, end)

    return judge_hits(index, viewer_id, text, hits, shielded)


def _raw_hits(index: LeakIndex, fenced: str) -> Iterator[tuple[int, tuple]]:
    """(end, value) of every occurrence of every key, overlapping ones included: the
    automaton's, then the long keys' found one by one."""
    if len(index.automaton):
        yield from index.automaton.iter(fenced)
    for key, value in index.long_keys:
        found = fenced.find(key)
        while found >= 0:
            yield found + len(key) - 1, value
            found = fenced.find(key, found + 1)


def _shielded_by_find(folded: str, labels: tuple[str, ...], start: int, end: int) -> bool:
    """Does a whole-token occurrence of one of the viewer's labels, at least as long as the
    hit, overlap it? Only such a label can overlap within this window."""
    for label in labels:
        size = len(label)
        if size < end - start:
            break  # longest first: the rest are shorter
        lo, hi = max(0, start - size + 1), min(len(folded), end + size - 1)
        found = folded.find(label, lo, hi)
        while found >= 0:
            stop = found + size
            if not (found > 0 and _is_word(folded[found - 1])) and not (
                stop < len(folded) and _is_word(folded[stop])
            ):
                return True
            found = folded.find(label, found + 1, hi)
    return False


def judge_hits(
    index: LeakIndex,
    viewer_id: str,
    text: str,
    hits: list[Hit],
    shielded: Callable[[int, int], bool],
) -> list[Finding]:
    """Findings among raw whole-token hits: the winners of overlaps, judged for the viewer,
    minus those `shielded` (covered by the viewer's own labels). However hits were found (the
    automaton here, the regexes of `memory.engine.leaks.naive`), they are judged alike."""
    findings = []
    for start, end, number in _longest_leftmost(hits):
        finding = _judge(index, viewer_id, text, start, end, index.patterns[number])
        if finding is None or shielded(start, end):
            continue
        # After the overlap winners are chosen: an allowed winner is silent and never lets a
        # shorter hit inside it speak instead, exactly as a stored finding deleted would be.
        if index.world.allowed and index.world.allows(viewer_id, finding):
            continue
        findings.append(finding)
    return findings


def _longest_leftmost(hits: list[Hit]) -> list[Hit]:
    """Winners among overlapping hits: longest first, then leftmost; sorted by start."""
    by_start = sorted(hits)
    if all(a[1] <= b[0] for a, b in zip(by_start, by_start[1:], strict=False)):
        return by_start  # the usual case: nothing overlaps
    taken: list[Hit] = []
    starts: list[int] = []
    for hit in sorted(hits, key=lambda h: (h[0] - h[1], h[0], h[2])):
        start, end, _ = hit
        # Winners never overlap, so only the neighbours by start can collide.
        i = bisect_left(starts, start)
        if i > 0 and taken[i - 1][1] > start:
            continue
        if i < len(taken) and taken[i][0] < end:
            continue
        taken.insert(i, hit)
        starts.insert(i, start)
    return taken


def _judge(
    index: LeakIndex, viewer_id: str, text: str, start: int, end: int, p: _Pattern
) -> Finding | None:
    world = index.world
    viewer_aliases = world.aliases.get(viewer_id, {})
    if p.ordinary:
        return None
    for entity_id in p.names:
        if entity_id == viewer_id:
            return None
        if alias_state(viewer_aliases.get(entity_id), world.true_names[entity_id]) == "known":
            return None
    if any(private.visible_to(viewer_id) for private in p.privates):
        return None

    written = text[start:end]
    # A readable id ("hale") is also a word of a name: what the viewer legitimately knows of
    # that object (its own name, its label, a private value it may see) explains it.
    for object_id in p.ids:
        if any(_holds_token(known, p.key) for known in _known_texts(index, viewer_id, object_id)):
            return None
    if p.names:
        entity_id = p.names[0]
        return Finding(
            "unknown_name",
            start,
            end,
            written,
            entity_id,
            _name_reason(world, viewer_id, entity_id, written),
        )
    # A word of an entity's true name the viewer does not know is that name leaking, not an id.
    for object_id in p.ids:
        name = world.true_names.get(object_id)
        if name is not None and _holds_token(fold(name.strip()), p.key):
            reason = _name_reason(world, viewer_id, object_id, written, whole=name.strip())
            return Finding("unknown_name", start, end, written, object_id, reason)
    if p.ids:
        exact_ids = [object_id for object_id in p.ids if object_id == written]
        found = _id_finding(start, end, written, (exact_ids or p.ids)[0])
        if reads_as_description(text, start, end, found.entity_id):
            return replace(found, likely_description=True)
        return found
    private = min(p.privates, key=lambda v: (v.object_id, v.attribute_name))
    reason = (
        f"private attribute '{private.attribute_name}' of {private.object_id}; "
        f"{viewer_id} has no access"
    )
    return Finding(
        "private_attribute", start, end, written, private.object_id, reason, private.attribute_name
    )


def _name_reason(
    world: LeakWorld, viewer_id: str, entity_id: str, written: str, whole: str | None = None
) -> str:
    label = world.aliases.get(viewer_id, {}).get(entity_id)
    of_name = "its true name" if whole is None else f"part of its true name '{whole}'"
    if label is None:
        return f"{viewer_id} has no alias for {entity_id}; '{written}' is {of_name}"
    if whole is None:
        return f"{viewer_id} knows {entity_id} only as '{label}'"
    return f"{viewer_id} knows {entity_id} only as '{label}'; '{written}' is {of_name}"


def reason_by_name(
    reason: str,
    viewer_id: str,
    entity_id: str | None,
    attribute_name: str | None,
    name: Callable[[str], str],
) -> str:
    """A finding's reason as a page says it, the viewer and the entity by `name`. The
    scanner writes ids (the CLI, the API and the exports are read by tools as well as
    people); only the ids at the places its sentences put them are swapped, so a label or a
    written text that holds an id stays as written."""
    if not entity_id:
        return reason
    viewer, entity = name(viewer_id), name(entity_id)
    for was, now in (
        (f"{viewer_id} knows {entity_id} only as ", f"{viewer} knows {entity} only as "),
        (f"{viewer_id} has no alias for {entity_id}; ", f"{viewer} has no alias for {entity}; "),
        (
            f"private attribute '{attribute_name}' of {entity_id}; ",
            f"private attribute '{attribute_name}' of {entity}; ",
        ),
    ):
        if reason.startswith(was):
            reason = now + reason[len(was) :]
            break
    no_access = f"; {viewer_id} has no access"
    if attribute_name and reason.endswith(no_access):
        reason = reason[: -len(no_access)] + f"; {viewer} has no access"
    return reason


def _known_texts(index: LeakIndex, viewer_id: str, object_id: str) -> list[str]:
    """Folded texts the viewer legitimately holds for this object: its own true name (when
    the object is the viewer), the label it uses for it, private values of it it may see."""
    world = index.world
    known: list[str] = []
    if object_id == viewer_id:
        if (name := world.true_names.get(object_id)) is not None:
            known.append(fold(name.strip()))
    else:
        label = world.aliases.get(viewer_id, {}).get(object_id)
        if label:
            known.append(fold(label.strip()))
    known += [
        fold(private.value.strip())
        for private in index.privates_of.get(object_id, ())
        if private.visible_to(viewer_id)
    ]
    return known


@lru_cache(maxsize=4096)
def _token_pattern(key: str) -> re.Pattern[str]:
    return re.compile(r"(?<!\w)" + re.escape(key) + r"(?!\w)")


def _holds_token(haystack: str, key: str) -> bool:
    """Does `key` stand in `haystack` as whole tokens ("hale" in "hale morrow", not in
    "haley"; "the-tannery" not in "the tannery")? Both are folded."""
    return bool(haystack) and _token_pattern(key).search(haystack) is not None


# Words that, just before an ordinary word, make it a description ("the keeper", "an old
# miller", "her castaway"): articles, demonstratives, possessives and quantifiers.
DETERMINERS = frozenset(
    ("a", "an", "the", "this", "that", "these", "those", "my", "your", "his", "her", "its")
    + ("our", "their", "one", "another", "some", "any", "every", "each", "no")
)
_WORDS_BEFORE = re.compile(r"(?:([^\W\d_]+)[ \t]+)?([^\W\d_]+)[ \t]+$")


def reads_as_description(text: str, start: int, end: int, object_id: str) -> bool:
    """Does this hit of a readable id read as an ordinary word in running text? The id is one
    plain lowercase word ("keeper"), written exactly so (lowercase: "Keeper" at a sentence
    start or as a name is not a description), and a determiner stands just before it or one
    adjective before it ("the keeper", "an old miller"). Such a finding is still reported
    (every leak must be, recall first); it is labelled "likely a description" for triage."""
    written = text[start:end]
    if written != object_id or not _PLAIN_LOWER.fullmatch(written):
        return False
    line_start = text.rfind("\n", 0, start) + 1
    before = _WORDS_BEFORE.search(text, line_start, start)
    if before is None:
        return False
    previous, last = before.group(1), before.group(2)
    if last.lower() in DETERMINERS:
        return True
    # "the old keeper": a determiner, then one lowercase word (an adjective)
    return previous is not None and previous.lower() in DETERMINERS and last.islower()


_PLAIN_LOWER = re.compile(r"[a-z]+")


def _id_finding(start: int, end: int, written: str, object_id: str) -> Finding:
    return Finding(
        "system_id", start, end, written, object_id, f"system id of object '{object_id}'"
    )
