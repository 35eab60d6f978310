"""How the inspector's pages say a time: one format for people, in the world's own clock (UTC,
as the digest and the prompt say it: "Jul 6, 9:36 AM"), inside a <time> whose datetime and
tooltip carry the ISO form. World stamps, wall-clock datetimes and the projection watermark's
microseconds all go through here, so no page invents a fourth format."""

from __future__ import annotations

from datetime import UTC, datetime

from django import template
from django.utils.html import conditional_escape, format_html
from django.utils.safestring import SafeString

from memory.engine.clock import parse_timestamp, said_at, short_date, time_of_day

register = template.Library()


def _moment(value: object) -> tuple[datetime | None, str]:
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


def _years(context) -> bool:
    """Whether this page says years (memory.web.context.world_clock): its world crosses one."""
    return bool(context.get("world_years"))


@register.simple_tag(takes_context=True)
def moment(context: object, value: object, empty: str = "—") -> str:
    """<time datetime="ISO" title="ISO">Jul 6, 9:36 AM</time>; an unparseable stamp as written.
    On a page whose world crosses a year: "Dec 31, 2026, 11:59 PM"."""
    at, iso = _moment(value)
    if at is None:
        return format_html('<span class="moment">{}</span>', iso or empty)
    return _time(iso, said_at(at, year=_years(context)))


@register.simple_tag(takes_context=True)
def span(context: object, first: object, last: object) -> str:
    """Two times as one span: "Jul 6, 9:36 AM – 9:55 AM" (the day said once when shared; the
    year said at both ends when the span or the page's world crosses one)."""
    a, a_iso = _moment(first)
    b, b_iso = _moment(last)
    if a is None or b is None:
        return format_html("{} – {}", moment(context, first), moment(context, last))
    if a_iso == b_iso:
        return moment(context, first)
    if a.year != b.year:  # "Dec 31, 11:59 PM – Jan 1, 12:00 AM" would hide a year going by
        return format_html(
            '<span class="span">{} – {}</span>',
            _time(a_iso, said_at(a, year=True)),
            _time(b_iso, said_at(b, year=True)),
        )
    years = _years(context)
    second = time_of_day(b) if short_date(a) == short_date(b) else said_at(b, year=years)
    return format_html(
        '<span class="span">{} – {}</span>', moment(context, first), _time(b_iso, second)
    )


def _time(iso: str, words: str) -> str:
    return format_html('<time class="moment" datetime="{}" title="{}">{}</time>', iso, iso, words)


@register.filter
def said(value: object, years: object = False) -> str:
    """The same words as {% moment %}, as plain text (an SVG <title>, an attribute):
    `value|said:world_years` says the year where the page does."""
    at, iso = _moment(value)
    return said_at(at, year=bool(years)) if at is not None else iso


def _marked(line: str, flaws) -> SafeString:
    """`line` with each flaw in a <mark>, every piece escaped by format_html."""
    pieces, at = [], 0
    for flaw in sorted(flaws, key=lambda f: (f.start, f.end)):
        if flaw.start < at or flaw.end > len(line):
            continue  # overlapping or out of the line: left unmarked, never mis-cut
        pieces.append(conditional_escape(line[at : flaw.start]))
        title = f"{flaw.kind}; corrected: “{flaw.corrected}”"
        if flaw.start == flaw.end:  # words the corrected line has and omnia's lacks
            pieces.append(
                format_html('<mark class="flaw flaw-gap" title="{}">&#8203;</mark>', title)
            )
        else:
            pieces.append(
                format_html(
                    '<mark class="flaw flaw-{}" title="{}">{}</mark>',
                    flaw.kind,
                    title,
                    line[flaw.start : flaw.end],
                )
            )
        at = flaw.end
    pieces.append(conditional_escape(line[at:]))
    return format_html("{}" * len(pieces), *pieces)  # each piece is escaped already


@register.simple_tag
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
        return format_html("")
    corrected = field("line_corrected")
    if corrected is None or corrected == line:
        return format_html('<span class="line">{}</span>', line)
    return format_html(
        '<span class="line line-omnia" data-reading="omnia">{}</span>'
        '<span class="line line-corrected" data-reading="corrected">{}</span>',
        _marked(line, field("flaws", ())),
        corrected,
    )
