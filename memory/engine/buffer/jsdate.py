"""JavaScript's clock, as omnia prints it: `new Date(timestamp).toLocaleTimeString("en-US",
{hour12: true, timeZone: "UTC"})`, V8's quirks included. Only the v1 serializer shows it.
Not `memory.engine.clock`: V8 accepts and refuses other strings than Python's parser does, and
the seed's lines must match byte for byte.
"""

from __future__ import annotations

import re
from functools import lru_cache

from memory.engine.buffer.entry import Undeliverable

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
