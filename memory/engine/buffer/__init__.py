"""Subjective buffer serialization: one stored memory row as one viewer reads it (seed 000 §2-§3).

Two eras. v1 intents (`originalText`/`description`) render byte for byte like the seed's
`serializeSubjectiveBufferEntry`, quirks included. v2 intents (`content` with
`entity@<id>[words]` tags) render like later omnia's `hydrate`, minus its bugs: every tag
becomes the viewer's alias, or a first-person form when the viewer is the one tagged, and a
first-person verb follows its subject into the third person ("I say" -> "Gareth says").

This is the read path for up to a million rows per page of a benchmark, so no pydantic here:
`json.loads`, precompiled regexes and a cached clock format. Validation lives at the doors
(`memory.engine.intents`); a row the doors would have refused is `Undeliverable`, never a crash.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from typing import Any, Protocol

from memory.engine.aliases import UNFAMILIAR, Viewer, resolve_alias


class Undeliverable(Exception):  # noqa: N818 - the seed's word for a row that cannot be shown
    """A stored row that cannot be parsed or rendered; `reason` says why."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class Entry(Protocol):
    @property
    def timestamp(self) -> str: ...

    @property
    def intent(self) -> dict[str, Any]: ...

    @property
    def outcome(self) -> dict[str, Any] | None: ...


# --- the clock: Date#toLocaleTimeString("en-US", {hour12: true, timeZone: "UTC"}) -----------

# The ISO 8601 subset V8 accepts (Date Time String Format plus a space separator and a
# colon-less offset, which V8's fallback parser also takes). Anything else we refuse rather
# than guess what V8's legacy parser would have made of it.
_ISO = re.compile(
    r"(?P<year>[+-]\d{6}|\d{4})(?:-(?P<month>\d\d)(?:-(?P<day>\d\d))?)?"
    r"(?:[Tt ](?P<hour>\d\d):(?P<minute>\d\d)(?::(?P<second>\d\d)(?:\.(?P<fraction>\d+))?)?)?"
    r"(?:(?P<utc>[Zz])|(?P<sign>[+-])(?P<off_h>\d\d):?(?P<off_m>\d\d))?"
)
_MAX_EPOCH_MS = 8.64e15
INVALID_DATE = "Invalid Date"


def _days_from_civil(year: int, month: int, day: int) -> int:
    # Howard Hinnant's algorithm; only used to range-check six-digit years.
    year -= month <= 2
    era = year // 400  # floor division already rounds negative years down
    yoe = year - era * 400
    doy = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


@lru_cache(maxsize=8192)
def js_time_string(timestamp: str) -> str:
    """What omnia prints for `new Date(timestamp)`: `h:mm:ss AM/PM` in UTC, seconds truncated,
    12 for noon and midnight, or "Invalid Date" for an ISO-shaped string V8 rejects.

    A string with no zone is local time to JavaScript; omnia's worlds run in UTC, so is ours.
    Raises Undeliverable for text that is not ISO-shaped at all.
    """
    m = _ISO.fullmatch(timestamp) if isinstance(timestamp, str) else None
    if m is None:
        raise Undeliverable(f"timestamp {timestamp!r} is not an ISO 8601 date")
    year_s, month_s, day_s = m.group("year", "month", "day")
    hour_s, minute_s, second_s = m.group("hour", "minute", "second")
    month = int(month_s) if month_s else 1
    day = int(day_s) if day_s else 1
    hour = int(hour_s) if hour_s else 0
    minute = int(minute_s) if minute_s else 0
    second = int(second_s) if second_s else 0
    fraction = m.group("fraction") or ""
    # V8 checks day <= 31 whatever the month (Feb 31 rolls into March; the clock is unchanged).
    if not (1 <= month <= 12 and 1 <= day <= 31 and minute <= 59 and second <= 59):
        return INVALID_DATE
    if hour > 24 or (hour == 24 and (minute or second or fraction.strip("0"))):
        return INVALID_DATE
    if year_s == "-000000":
        return INVALID_DATE
    offset = 0
    if m.group("sign"):
        off_h, off_m = int(m.group("off_h")), int(m.group("off_m"))
        if off_h > 23 or off_m > 59:
            return INVALID_DATE
        offset = (off_h * 60 + off_m) * (1 if m.group("sign") == "+" else -1)
    seconds_of_day = hour * 3600 + minute * 60 + second - offset * 60
    if len(year_s) == 7:
        ms = (
            _days_from_civil(int(year_s), month, day) * 86_400_000
            + seconds_of_day * 1000
            + int((fraction + "000")[:3])
        )
        if abs(ms) > _MAX_EPOCH_MS:
            return INVALID_DATE
    seconds_of_day %= 86_400
    h24, rest = divmod(seconds_of_day, 3600)
    mins, secs = divmod(rest, 60)
    return f"{h24 % 12 or 12}:{mins:02d}:{secs:02d} {'AM' if h24 < 12 else 'PM'}"


# --- shared pieces ---------------------------------------------------------------------------


def _outcome_suffix(outcome: object) -> str:
    if not outcome:
        # JavaScript's `if (entry.outcome)`: a missing, null or empty-string outcome adds nothing.
        return ""
    if type(outcome) is not dict:
        raise Undeliverable("outcome is not an object")
    valid = outcome.get("isValid")
    if valid is True:
        return " (Outcome: Succeeded)"
    reason = outcome.get("reason")
    if valid is not False or type(reason) is not str:
        raise Undeliverable("outcome needs a boolean isValid and a string reason")
    return f" (Outcome: Failed - {reason})"


def _str_list(intent: dict[str, Any], key: str) -> list[str]:
    value = intent.get(key)
    if type(value) is not list or not all(type(v) is str for v in value):
        raise Undeliverable(f"intent field {key!r} must be a list of strings")
    return value


# --- v1: the seed's serializer ----------------------------------------------------------------


def _render_v1(timestamp: str, intent: dict[str, Any], outcome: object, viewer: Viewer) -> str:
    kind = intent.get("type")
    if kind != "dialogue" and kind != "action":  # noqa: PLR1714 - two compares beat a set here
        raise Undeliverable(f"unknown v1 intent type {kind!r}")
    actor = intent.get("actorId")
    if type(actor) is not str:
        raise Undeliverable("intent has no string actorId")
    description = intent.get("description")
    if type(description) is not str:
        raise Undeliverable("v1 intent has no string description")
    targets = _str_list(intent, "targetIds")
    if type(timestamp) is not str:
        raise Undeliverable("timestamp is not a string")
    time = js_time_string(timestamp)
    if kind == "dialogue":
        # `join(", ") || "someone"`: a single target whose alias is "" also reads "someone".
        named = ", ".join([resolve_alias(viewer, t) for t in targets]) or "someone"
        return f'[{time}] {resolve_alias(viewer, actor)} spoke to {named}: "{description}"'
    return f"[{time}] {resolve_alias(viewer, actor)} {description}{_outcome_suffix(outcome)}"


# --- v2: hydrate ---------------------------------------------------------------------------

# `entity@<id>[words]`; a repeated prefix is upstream's dehydrate bug
# (`entity@entity@bob[bob][the hooded figure]`), and a tag without words still names an id.
_TAG = re.compile(
    r"(?P<pre>(?:entity@)+)(?:(?P<id>[^\s\[\]@]*)\[(?P<words>[^\[\]]*)\]|(?P<bare>[\w-]+(?:[.:][\w-]+)*)?)"
)
_EXTRA_WORDS = re.compile(r"\[([^\[\]]*)\]")
_CONJUNCTION = re.compile(r"\s*(?:,\s*(?:(?:and|or|nor)\s+)?|(?:and|or|nor)\s+)", re.IGNORECASE)
_NEXT_WORD = re.compile(r"(\s+)([A-Za-z][A-Za-z'’]*)")
_POSSESSIVE_MARK = re.compile(r"['’]s(?![A-Za-z])")
_FIRST_PERSON_CONTRACTION = re.compile(r"['’](m|ve)(?![A-Za-z])")

_SUBJECT, _OBJECT, _POSSESSIVE, _INDEPENDENT, _REFLEXIVE = range(5)
_FIRST_PERSON = ("I", "me", "my", "mine", "myself")

# Person of the words a tag was written with: who the following verb agreed with.
_FIRST, _THIRD, _PLURAL = 1, 3, 0

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
_ADVERBS = frozenset(
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
_LY_VERBS = frozenset(
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
    elif low in _MODALS or low in _PAST or low.endswith("ed"):
        return verb
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


def _agree(text: str, source: int, target: int) -> str:
    """Make the verb at the head of `text` agree with a subject that changed person."""
    if source == target:
        return text
    pos = 0
    for _ in range(4):
        m = _NEXT_WORD.match(text, pos)
        if m is None:
            return text
        word = m.group(2)
        low = word.lower()
        if low in _ADVERBS or (low.endswith("ly") and low not in _LY_VERBS):
            pos = m.end()
            continue
        changed = _third_person(word) if target == _THIRD else _first_person(word, source)
        return text[: m.start(2)] + changed + text[m.end(2) :]
    return text


class _Tag:
    __slots__ = ("start", "end", "id", "words")

    def __init__(self, start: int, end: int, id_: str, words: str | None) -> None:
        self.start, self.end, self.id, self.words = start, end, id_, words


def _find_tags(content: str) -> list[_Tag]:
    tags: list[_Tag] = []
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
        tags.append(_Tag(m.start(), end, id_, words))
        pos = end if end > m.start() else end + 1
    return tags


def entity_tag_ids(content: str) -> list[str]:
    """The ids `content` tags, once each, in order of first appearance (innermost id of a
    nested tag)."""
    seen: dict[str, None] = {}
    for tag in _find_tags(content):
        if tag.id:
            seen.setdefault(tag.id)
    return list(seen)


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


# One slot per tag: (id, first-person word, suffix after an alias, capitalise the alias,
# the following text when the viewer is the one tagged, the following text otherwise).
_Slot = tuple[str, str, str, bool, str, str]


@lru_cache(maxsize=16384)
def _compile(content: str) -> tuple[str, tuple[_Slot, ...]]:
    """Everything about a `content` that does not depend on who reads it, worked out once:
    the same event sits in every witness's buffer, so a page renders each content many times."""
    tags = _find_tags(content)
    texts = [content[: tags[0].start]]
    texts.extend(content[a.end : b.start] for a, b in zip(tags, tags[1:], strict=False))
    texts.append(content[tags[-1].end :])
    n = len(tags)
    # A tag joined to its neighbour by "and"/"or"/"," shares its neighbour's role, and a
    # compound subject keeps its plural verb.
    chained = [i > 0 and _CONJUNCTION.fullmatch(texts[i]) is not None for i in range(n + 1)]
    slots: list[_Slot] = []
    head_of_chain = 0
    for i, tag in enumerate(tags):
        if not chained[i]:
            head_of_chain = i
        after = texts[i + 1]
        opens = _opens_clause(texts[head_of_chain], head_of_chain == 0)
        role, source = _role_of(tag.words, after, opens)
        possessive_mark = _POSSESSIVE_MARK.match(after)
        if possessive_mark is not None and role in (_SUBJECT, _OBJECT):
            role, after = _POSSESSIVE, after[possessive_mark.end() :]
        after_self = after_other = after
        if role == _SUBJECT and not chained[i] and not chained[i + 1]:
            after_self = _agree(after, source, _FIRST)
            contraction = _FIRST_PERSON_CONTRACTION.match(after) if source == _FIRST else None
            if contraction is not None:
                after_other = (" is" if contraction.group(1) == "m" else " has") + after[
                    contraction.end() :
                ]
            else:
                after_other = _agree(after, source, _THIRD)
        slots.append(
            (
                tag.id,
                _FIRST_PERSON[role],
                "'s" if role in (_POSSESSIVE, _INDEPENDENT) else "",
                _ends_sentence(texts[i]),
                after_self,
                after_other,
            )
        )
    return texts[0], tuple(slots)


def hydrate(content: str, viewer: Viewer) -> str:
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


def _render_v2(intent: dict[str, Any], outcome: object, viewer: Viewer) -> str:
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
    return line + _outcome_suffix(outcome)


# --- entry points --------------------------------------------------------------------------


def _render(timestamp: str, intent: object, outcome: object, viewer: Viewer) -> str:
    if type(intent) is not dict:
        raise Undeliverable("intent is not a JSON object")
    if "content" in intent:
        return _render_v2(intent, outcome, viewer)
    return _render_v1(timestamp, intent, outcome, viewer)


def serialize_subjective_buffer_entry(entry: Entry, viewer: Viewer) -> str:
    """The seed's serializer over an already-parsed entry (`.timestamp`, `.intent`, `.outcome`)."""
    return _render(entry.timestamp, entry.intent, entry.outcome, viewer)


_loads = json.loads


def render_stored_entry(
    timestamp: str, intent_json: str, outcome_json: str | None, viewer: Viewer
) -> str:
    """Render a `buffer_entries` row straight from its columns; Undeliverable if it cannot be."""
    try:
        intent = _loads(intent_json)
    except (ValueError, TypeError, RecursionError):
        raise Undeliverable("intent_json is not JSON") from None
    outcome = None
    if outcome_json:
        try:
            outcome = _loads(outcome_json)
        except (ValueError, TypeError, RecursionError):
            raise Undeliverable("outcome_json is not JSON") from None
    return _render(timestamp, intent, outcome, viewer)
