"""One date format, and the year said when a span crosses one (issue 28 item 7)."""

from __future__ import annotations

import re
from datetime import UTC, datetime

import pytest

from memory.engine.clock import said_at, short_date
from memory.engine.projections import run_cycle
from memory.engine.write_door import remember
from memory.templatetags.inspector import span
from tests.helpers import CHEST


@pytest.mark.pure
def test_said_at_with_and_without_the_year() -> None:
    at = datetime(2026, 12, 31, 23, 59, tzinfo=UTC)
    assert said_at(at) == "Dec 31, 11:59 PM"
    assert said_at(at, year=True) == "Dec 31, 2026, 11:59 PM"


@pytest.mark.pure
def test_a_day_is_named_as_strftime_names_it_in_every_month() -> None:
    days = [datetime(2026, month, day, tzinfo=UTC) for month in range(1, 13) for day in (1, 28)]
    assert [short_date(d) for d in days] == [f"{d:%b} {d.day}" for d in days]
    assert short_date(datetime(2027, 9, 3, tzinfo=UTC)) == "Sep 3"


@pytest.mark.pure
def test_a_span_across_a_year_says_both_years() -> None:
    assert span({}, "2026-12-31T23:59:00.000Z", "2027-01-01T00:00:00.000Z") == (
        '<span class="span"><time class="moment" datetime="2026-12-31T23:59:00.000Z" '
        'title="2026-12-31T23:59:00.000Z">Dec 31, 2026, 11:59 PM</time> – '
        '<time class="moment" datetime="2027-01-01T00:00:00.000Z" '
        'title="2027-01-01T00:00:00.000Z">Jan 1, 2027, 12:00 AM</time></span>'
    )


@pytest.mark.pure
def test_a_span_within_a_year_keeps_the_short_form() -> None:
    assert span({}, "2026-07-06T09:36:00.000Z", "2026-07-06T09:55:00.000Z") == (
        '<span class="span"><time class="moment" datetime="2026-07-06T09:36:00.000Z" '
        'title="2026-07-06T09:36:00.000Z">Jul 6, 9:36 AM</time> – '
        '<time class="moment" datetime="2026-07-06T09:55:00.000Z" '
        'title="2026-07-06T09:55:00.000Z">9:55 AM</time></span>'
    )
    two_days = span({}, "2026-07-06T09:36:00.000Z", "2026-07-07T09:55:00.000Z")
    assert ">Jul 6, 9:36 AM</time> – " in two_days and ">Jul 7, 9:55 AM</time>" in two_days


def _times_on_the_viewer_page(client) -> list[str]:
    page = client.get("/saves/cast/viewers/alice/").content.decode()
    return re.findall(r'<a class="line-time"[^>]*><time class="moment"[^>]*>([^<]*)</time>', page)


def test_every_time_on_a_page_says_its_year_when_the_world_crosses_one(reader_client, cast):
    # Two lines a minute apart, one each side of midnight on New Year's Eve: without the
    # year they read as one night's "Dec 31, 11:59 PM" and "Jan 1, 12:00 AM".
    remember("alice", CHEST, timestamp="2026-12-31T23:59:00.000Z")
    remember("alice", CHEST, timestamp="2027-01-01T00:00:00.000Z")
    run_cycle()
    assert _times_on_the_viewer_page(reader_client) == [
        "Dec 31, 2026, 11:59 PM",
        "Jan 1, 2027, 12:00 AM",
    ]


def test_a_world_within_one_year_keeps_the_short_form_on_its_pages(reader_client, cast):
    remember("alice", CHEST, timestamp="2026-07-06T12:03:00.000Z")
    remember("alice", CHEST, timestamp="2026-07-07T08:00:00.000Z")
    run_cycle()
    assert _times_on_the_viewer_page(reader_client) == ["Jul 6, 12:03 PM", "Jul 7, 8:00 AM"]
