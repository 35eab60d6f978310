"""The inspector's template tags: a time as every page says it (memory.html_pieces: one
format for people, in the world's own clock, inside a <time> carrying the ISO form), a span of
two, and a buffer line's two readings. The pieces are made in memory.html_pieces, which the
rows the views make in Python print through too."""

from __future__ import annotations

from django import template

from memory.html_pieces import moment_html, said_words, span_html
from memory.html_pieces import reading_lines as reading_lines_html

register = template.Library()


def _years(context) -> bool:
    """Whether this page says years (memory.web.context.world_clock): its world crosses one."""
    return bool(context.get("world_years"))


@register.simple_tag(takes_context=True)
def moment(context: object, value: object, empty: str = "—") -> str:
    """<time datetime="ISO" title="ISO">Jul 6, 9:36 AM</time>; an unparseable stamp as written.
    On a page whose world crosses a year: "Dec 31, 2026, 11:59 PM"."""
    return moment_html(value, _years(context), empty)


@register.simple_tag(takes_context=True)
def span(context: object, first: object, last: object) -> str:
    """Two times as one span: "Jul 6, 9:36 AM – 9:55 AM" (the day said once when shared; the
    year said at both ends when the span or the page's world crosses one)."""
    return span_html(first, last, _years(context))


@register.filter
def said(value: object, years: object = False) -> str:
    """The same words as {% moment %}, as plain text (an SVG <title>, an attribute):
    `value|said:world_years` says the year where the page does."""
    return said_words(value, bool(years))


register.simple_tag(reading_lines_html, name="reading_lines")
