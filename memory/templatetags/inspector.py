"""How the inspector's pages say a time: one format for people, in the world's own clock (UTC,
as the digest and the prompt say it: "Jul 6, 9:36 AM"), inside a <time> whose datetime and
tooltip carry the ISO form. World stamps, wall-clock datetimes and the projection watermark's
microseconds all go through here, so no page invents a fourth format."""

from __future__ import annotations

from datetime import UTC, datetime

from django import template
from django.utils.html import format_html

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


@register.simple_tag
def moment(value: object, empty: str = "—") -> str:
    """<time datetime="ISO" title="ISO">Jul 6, 9:36 AM</time>; an unparseable stamp as written."""
    at, iso = _moment(value)
    if at is None:
        return format_html('<span class="moment">{}</span>', iso or empty)
    return format_html(
        '<time class="moment" datetime="{}" title="{}">{}</time>', iso, iso, said_at(at)
    )


@register.simple_tag
def span(first: object, last: object) -> str:
    """Two times as one span: "Jul 6, 9:36 AM – 9:55 AM" (the day said once when shared; the
    year said at both ends when the span crosses one)."""
    a, a_iso = _moment(first)
    b, b_iso = _moment(last)
    if a is None or b is None:
        return format_html("{} – {}", moment(first), moment(last))
    if a_iso == b_iso:
        return moment(first)
    if a.year != b.year:  # "Dec 31, 11:59 PM – Jan 1, 12:00 AM" would hide a year going by
        return format_html(
            '<span class="span">{} – {}</span>',
            _time(a_iso, said_at(a, year=True)),
            _time(b_iso, said_at(b, year=True)),
        )
    second = time_of_day(b) if short_date(a) == short_date(b) else said_at(b)
    return format_html('<span class="span">{} – {}</span>', moment(first), _time(b_iso, second))


def _time(iso: str, words: str) -> str:
    return format_html('<time class="moment" datetime="{}" title="{}">{}</time>', iso, iso, words)


@register.filter
def said(value: object) -> str:
    """The same words as {% moment %}, as plain text (an SVG <title>, an attribute)."""
    at, iso = _moment(value)
    return said_at(at) if at is not None else iso
