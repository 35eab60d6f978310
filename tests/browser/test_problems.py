"""The overview's quarantined-rows panel in a browser (issue 14: a poison row is listed with
its reason, and the rest of the page works as before)."""

from __future__ import annotations

import pytest
from django.db import connection

from memory.engine.clock import now_us
from memory.engine.projections import run_cycle
from memory.engine.shards import shard_of
from memory.engine.write_door import remember

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def poisoned(cast):
    remember(
        "alice",
        {
            "type": "thought",
            "content": "The cellar door is open.",
            "actorId": "alice",
            "targetIds": [],
        },
        timestamp="2026-07-06T12:03:00.000Z",
    )
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO buffer_entries (game_save_id, id, owner_id, timestamp, intent_json, "
            "created_at, shard) VALUES (%s, %s, %s, %s, %s, %s, %s)",
            [
                cast.bob.game_save_id,
                "bad-row",
                "bob",
                "2026-07-06T12:04:00.000Z",
                "[1, 2]",
                now_us(),
                shard_of("bob"),
            ],  # fmt: skip
        )
    run_cycle()


def test_the_overview_lists_a_quarantined_row_with_its_reason(login, page, poisoned, screenshots):
    login(page, "/saves/cast/")
    panel = page.locator("#problems-panel")
    assert panel.locator(".problem-count").inner_text() == "1"
    row = panel.locator("li")
    assert row.count() == 1
    assert row.inner_text().splitlines()[0] == "buffer_entries bad-row bob · tavern"
    assert row.locator(".problem-reason").inner_text() == "intent_json is not a JSON object"
    screenshots("overview-problems")
    page.goto("/saves/cast/viewers/bob/")
    assert page.locator("h1").count() >= 1
    assert page.console_errors == []


@pytest.fixture
def cycle_failed(cast):
    """The cast save's projection cycle failed (issue 29: a helper raised on its data), with
    hostile text in the error's message."""
    from memory.engine.projections.problems import cycle_failed

    cycle_failed(MemoryError("the scanner died on <script>alert(1)</script> data"))


FAILED_CYCLE = (
    "the projection cycle failed: MemoryError: the scanner died on <script>alert(1)</script> data"
)


def test_a_failed_cycle_is_said_on_the_overview_and_the_save_page(
    login, page, cycle_failed, screenshots
):
    login(page, "/")
    said = page.locator('[data-save="cast"] .cycle-failure')
    assert said.locator("strong").inner_text() == FAILED_CYCLE
    assert page.locator("script:has-text('alert(1)')").count() == 0
    screenshots("overview-cycle-failure")
    said.locator("a").click()
    page.wait_for_url("**/saves/cast/#problems-panel")
    item = page.locator("#problems-panel li.cycle-failure")
    assert item.locator("strong").inner_text() == FAILED_CYCLE
    screenshots("save-cycle-failure")
    assert page.console_errors == []
