"""One date format, and the year said when a span crosses one (issue 28 item 7)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memory.engine.clock import said_at
from memory.templatetags.inspector import span

pytestmark = pytest.mark.pure


def test_said_at_with_and_without_the_year() -> None:
    at = datetime(2026, 12, 31, 23, 59, tzinfo=UTC)
    assert said_at(at) == "Dec 31, 11:59 PM"
    assert said_at(at, year=True) == "Dec 31, 2026, 11:59 PM"


def test_a_span_across_a_year_says_both_years() -> None:
    assert span("2026-12-31T23:59:00.000Z", "2027-01-01T00:00:00.000Z") == (
        '<span class="span"><time class="moment" datetime="2026-12-31T23:59:00.000Z" '
        'title="2026-12-31T23:59:00.000Z">Dec 31, 2026, 11:59 PM</time> – '
        '<time class="moment" datetime="2027-01-01T00:00:00.000Z" '
        'title="2027-01-01T00:00:00.000Z">Jan 1, 2027, 12:00 AM</time></span>'
    )


def test_a_span_within_a_year_keeps_the_short_form() -> None:
    assert span("2026-07-06T09:36:00.000Z", "2026-07-06T09:55:00.000Z") == (
        '<span class="span"><time class="moment" datetime="2026-07-06T09:36:00.000Z" '
        'title="2026-07-06T09:36:00.000Z">Jul 6, 9:36 AM</time> – '
        '<time class="moment" datetime="2026-07-06T09:55:00.000Z" '
        'title="2026-07-06T09:55:00.000Z">9:55 AM</time></span>'
    )
    two_days = span("2026-07-06T09:36:00.000Z", "2026-07-07T09:55:00.000Z")
    assert ">Jul 6, 9:36 AM</time> – " in two_days and ">Jul 7, 9:55 AM</time>" in two_days
