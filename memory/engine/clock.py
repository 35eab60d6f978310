"""World and wall time: one parse, one sortable key, one way to say a time of day or a day.

World timestamps are strings in whatever ISO form their writer used (omnia writes
`toISOString()`, `2026-07-06T12:38:00.000Z`); everything that compares or shows one goes
through here so "12:00:00Z" and "12:00:00.500Z" are never compared as text.
"""

from __future__ import annotations

import re
import time
from datetime import UTC, datetime

from django.utils import timezone

from memory.engine.errors import InvalidInput


def now_us() -> int:
    """Wall time in microseconds: write order (`created_at`), never world time."""
    return time.time_ns() // 1000


def iso_now() -> str:
    """Now, as JavaScript's `toISOString()` writes it: the form omnia stamps rows with."""
    return timezone.now().isoformat(timespec="milliseconds").replace("+00:00", "Z")


def parse_timestamp(timestamp: str | None) -> datetime | None:
    """An ISO timestamp as an aware datetime in its own offset (naive means UTC); None when it
    names no instant."""
    if not timestamp:
        return None
    try:
        moment = datetime.fromisoformat(timestamp)
    except (TypeError, ValueError):
        return None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


# What omnia could have written: `toISOString()` ("2026-07-06T12:38:00.000Z"), or a
# scenario's time in the ECMAScript date-time string format that `new Date()` reads back to
# the same instant. A full date, hours and minutes, and a zone: without one JavaScript reads
# local time, a different instant on every machine.
_WORLD_TIME = re.compile(
    r"\d{4}-\d\d-\d\dT\d\d:\d\d(?::\d\d(?:\.\d{1,9})?)?(?:Z|[+-]\d\d:\d\d)", re.ASCII
)


def timestamp_problem(value: object) -> str | None:
    """Why a write door refuses this world time, or None. Refused: what omnia could not have
    written, and what names no real instant (month 13, 25:00, an offset of 24 hours)."""
    if not isinstance(value, str):
        return "must be an ISO-8601 time string, like 2026-07-06T12:38:00.000Z"
    if _WORLD_TIME.fullmatch(value) and parse_timestamp(value) is not None:
        return None
    shown = value if len(value) <= 40 else value[:40] + "…"
    return f"{shown!r} is not an ISO-8601 time with a zone, like 2026-07-06T12:38:00.000Z"


def world_time_at(value: object, field: str = "at") -> str:
    """A moment asked for (`?at=`, `--at`) in omnia's own form, `toISOString()`'s, the form
    the rows' timestamps are compared in; InvalidInput naming `field` for anything else."""
    problem = timestamp_problem(value)
    if problem is not None:
        raise InvalidInput(f"{field}: {problem}", field=field)
    moment = parse_timestamp(value).astimezone(UTC)  # type: ignore[union-attr]
    return f"{moment:%Y-%m-%dT%H:%M:%S}.{moment.microsecond // 1000:03d}Z"


# time_key's mark for a time that names no instant. Every timed key starts with a digit, so in
# the fold's hot loops `key >= UNTIMED` says key.startswith(UNTIMED) without a method call.
UNTIMED = "~"


def is_untimed(timestamp: str) -> bool:
    """True when a stored world time names no instant: the fold keeps such a row out of time
    arithmetic (it is still a member), and an import marks it undeliverable."""
    return time_key(timestamp).startswith("~")


def time_key(timestamp: str) -> str:
    """A total-order key for a world timestamp: UTC, microseconds, lexicographic = chronological.

    Stored timestamps are strings in whatever ISO form the writer used; comparing them raw
    would order "12:00:00Z" after "12:00:00.500Z". Unparseable stamps sort after every real
    one ("~" > digits), so min/max stay a total order and the fold stays deterministic.
    """
    # toISOString() form, by far the common case: no parse needed.
    if (
        len(timestamp) == 24
        and timestamp[23] == "Z"
        and timestamp[19] == "."
        and timestamp[10] == "T"
    ):
        try:  # toISOString-shaped is not yet a real time ("2026-13-45T25:00:00.000Z")
            datetime.fromisoformat(timestamp[:23])
        except ValueError:
            return "~" + timestamp
        return timestamp[:23] + "000Z"
    moment = parse_timestamp(timestamp)
    if moment is None:
        return "~" + str(timestamp)
    moment = moment.astimezone(UTC)
    return f"{moment:%Y-%m-%dT%H:%M:%S}.{moment.microsecond:06d}Z"


def keyed(timestamp: str) -> tuple[str, datetime | None]:
    """(time_key(timestamp), moment_of_key of that key), with one parse in the common case: the
    fold reads both for every row, and parsing the toISOString() form twice was a tenth of a
    rebuild."""
    if (
        len(timestamp) == 24
        and timestamp[23] == "Z"
        and timestamp[19] == "."
        and timestamp[10] == "T"
    ):
        head = timestamp[:23]
        try:
            moment = datetime.fromisoformat(head)
        except ValueError:
            return "~" + timestamp, None
        if moment.tzinfo is None:  # ".fff" read as milliseconds: the instant the key names
            return head + "000Z", moment
        return head + "000Z", moment_of_key(head + "000Z")  # ".12Z" and the like: parse the key
    key = time_key(timestamp)
    return key, moment_of_key(key)


def moment_of_key(key: str) -> datetime | None:
    """The instant a time key names, as a naive datetime in UTC (keys are UTC; moments are only
    compared with each other, and the fold makes one per row), or None if it names none."""
    if key.startswith("~"):
        return None
    try:
        return datetime.fromisoformat(key[:-1])
    except ValueError:
        return None  # toISOString-shaped but not a real time ("T25:00"): no gap evidence


def time_of_day(moment: datetime) -> str:
    """ "12:38 PM": how the digest and the prompt say a time."""
    hour = moment.hour % 12 or 12
    return f"{hour}:{moment.minute:02d} {'AM' if moment.hour < 12 else 'PM'}"


# The English month abbreviations strftime's %b gives in the C locale (which the process
# keeps: nothing calls setlocale): a page says a hundred times, and strftime cost more than
# the rest of the line (0.2 ms of a viewer page).
MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


def short_date(moment: datetime) -> str:
    """ "Jul 6": how the digest says a day."""
    return f"{MONTHS[moment.month - 1]} {moment.day}"


def said_at(moment: datetime, *, year: bool = False) -> str:
    """ "Jul 6, 9:36 AM": how the inspector says a time to people (ISO goes in a tooltip);
    with `year`, "Dec 31, 2026, 11:59 PM" (a span that crosses a year says it)."""
    if year:
        return f"{short_date(moment)}, {moment.year}, {time_of_day(moment)}"
    return f"{short_date(moment)}, {time_of_day(moment)}"


def long_date(moment: datetime) -> str:
    """ "Monday, July 6, 2026": how the prompt says a day."""
    return f"{moment.strftime('%A')}, {moment.strftime('%B')} {moment.day}, {moment.year}"


def wall_iso(moment: datetime, *, timespec: str = "auto") -> str:
    """A wall-clock instant (a DateTimeField, `timezone.now()`) as the worker's status and log
    show it: Python's ISO form with its offset. Rows are stamped with `iso_now` instead."""
    return moment.isoformat(timespec=timespec)
