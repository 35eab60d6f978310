"""The HTML both doors print: `html` (format_html without its lazy-string checks), a time as
every page says it, and a buffer line's two readings. The template tags
(memory.templatetags.inspector) and the rows the views make in Python (memory.web.views.markup)
print through these, so a time or a line reads the same wherever it stands.

A time: one format for people, in the world's own clock (UTC, as the digest and the prompt
say it: "Jul 6, 9:36 AM"), inside a <time> whose datetime and tooltip carry the ISO form.
World stamps, wall-clock datetimes and the projection watermark's microseconds all go
through here, so no page invents a fourth format.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from html import escape
from typing import Any

from django.utils.safestring import SafeString, mark_safe

from memory.engine.clock import parse_timestamp, said_at, short_date, time_of_day

EMPTY = mark_safe("")


def html(template: str, *args: Any, **kwargs: Any) -> SafeString:
    """format_html without its lazy-string checks: each value escaped as conditional_escape
    escapes it (its own __html__ if it has one, else Django's escape, which is html.escape),
    then formatted in. format_html wraps each value in two keep_lazy checks, which cost more
    than the escaping itself: most of what a row of the leak report cost."""
    if kwargs:
        return SafeString(
            template.format(*map(escaped, args), **{k: escaped(v) for k, v in kwargs.items()})
        )
    return SafeString(template.format(*map(escaped, args)))  # most: no dict to make


def html_join(template: str, rows: Iterable[tuple]) -> SafeString:
    """format_html_join("", template, rows), each row made as `html` makes it."""
    return SafeString("".join(html(template, *row) for row in rows))


def escaped(value: Any) -> str:
    """`value` as the template prints it: its own __html__ if it has one (safe already), else
    escaped (Django's escape is html.escape)."""
    if value.__class__ is str:  # most values: no __html__ to look for (a failed lookup
        return escape(value)  # raises inside hasattr, the dearer half of this call)
    return value.__html__() if hasattr(value, "__html__") else escape(str(value))


def moment_of(value: object) -> tuple[datetime | None, str]:
    """(an aware UTC datetime or None, the ISO form to put in the tooltip)."""
    if isinstance(value, datetime):
        moment = value if value.tzinfo else value.replace(tzinfo=UTC)
        return moment.astimezone(UTC), moment.isoformat()
    if isinstance(value, int) and not isinstance(value, bool):
        # Write order in microseconds (created_at, a projection watermark); 0 is "never".
        if value <= 0:
            return None, ""
        moment = datetime.fromtimestamp(value / 1_000_000, tz=UTC)
        return moment, moment.isoformat(timespec="microseconds")
    text = "" if value is None else str(value)
    moment = parse_timestamp(text)
    return (moment.astimezone(UTC) if moment else None), text


def said_words(value: object, years: bool) -> str:
    """The words moment_html puts in its <time>, as plain text (an SVG <title>, an attribute):
    a stamp that names no instant as written."""
    at, iso = moment_of(value)
    return said_at(at, year=years) if at is not None else iso


def time_html(iso: str, words: str) -> SafeString:
    return html('<time class="moment" datetime="{}" title="{}">{}</time>', iso, iso, words)


def moment_html(value: object, years: bool, empty: str = "—") -> SafeString:
    """<time datetime="ISO" title="ISO">Jul 6, 9:36 AM</time>; an unparseable stamp as written.
    `years` (the page's world crosses a year): "Dec 31, 2026, 11:59 PM"."""
    at, iso = moment_of(value)
    if at is None:
        return html('<span class="moment">{}</span>', iso or empty)
    return time_html(iso, said_at(at, year=years))


def span_html(first: object, last: object, years: bool) -> SafeString:
    """Two times as one span: "Jul 6, 9:36 AM – 9:55 AM" (the day said once when shared; the
    year said at both ends when the span or, with `years`, the page's world crosses one)."""
    a, a_iso = moment_of(first)
    b, b_iso = moment_of(last)
    if a is None or b is None:
        return html("{} – {}", moment_html(first, years), moment_html(last, years))
    if a_iso == b_iso:
        return moment_html(first, years)
    if a.year != b.year:  # "Dec 31, 11:59 PM – Jan 1, 12:00 AM" would hide a year going by
        return html(
            '<span class="span">{} – {}</span>',
            time_html(a_iso, said_at(a, year=True)),
            time_html(b_iso, said_at(b, year=True)),
        )
    second = time_of_day(b) if short_date(a) == short_date(b) else said_at(b, year=years)
    return html(
        '<span class="span">{} – {}</span>', moment_html(first, years), time_html(b_iso, second)
    )


def _marked(line: str, flaws) -> SafeString:
    """`line` with each flaw in a <mark>, every piece escaped."""
    pieces, at = [], 0
    for flaw in sorted(flaws, key=lambda f: (f.start, f.end)):
        if flaw.start < at or flaw.end > len(line):
            continue  # overlapping or out of the line: left unmarked, never mis-cut
        pieces.append(escaped(line[at : flaw.start]))
        title = f"{flaw.kind}; corrected: “{flaw.corrected}”"
        if flaw.start == flaw.end:  # words the corrected line has and omnia's lacks
            pieces.append(html('<mark class="flaw flaw-gap" title="{}">&#8203;</mark>', title))
        else:
            pieces.append(
                html(
                    '<mark class="flaw flaw-{}" title="{}">{}</mark>',
                    flaw.kind,
                    title,
                    line[flaw.start : flaw.end],
                )
            )
        at = flaw.end
    pieces.append(escaped(line[at:]))
    return SafeString("".join(pieces))  # each piece is escaped already


def reading_lines(entry: object) -> SafeString:
    """A buffer line in both readings (issue 30): omnia's, with its flaws marked, and the
    corrected one when it differs; the panel's toggle shows one of them. An entry without a
    corrected reading (a compare line) is shown as its one line."""

    def field(name: str, default: object = None) -> object:
        if isinstance(entry, dict):
            return entry.get(name, default)
        return getattr(entry, name, default)

    line = field("line")
    if line is None:
        return EMPTY
    corrected = field("line_corrected")
    if corrected is None or corrected == line:
        return html('<span class="line">{}</span>', line)
    return html(
        '<span class="line line-omnia" data-reading="omnia">{}</span>'
        '<span class="line line-corrected" data-reading="corrected">{}</span>',
        _marked(line, field("flaws", ())),
        corrected,
    )
