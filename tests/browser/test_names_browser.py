"""Names everywhere a person reads, in Chromium (issue 28 item 4): sessions by the place and
the people as the viewer calls them, the alias history and the screen-reader labels by name; the session
keys only when QA mode asks for ids."""

from __future__ import annotations

import pytest

from tests.browser.test_inspector_pages import serious_violations

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
TAVERN = "a low-beamed tavern with fishing nets hung from the rafters"
QUAY = "a fish-scented stone quay where the night boats tie up"


def test_sessions_history_and_labels_read_names(login, page, demo, screenshots) -> None:
    login(page, "/saves/demo/viewers/npc-pip/")
    cells = page.locator("#sessions-panel table.sessions tbody tr td:first-child")
    assert [c.strip() for c in cells.all_inner_texts()] == [
        f"A scene at {TAVERN}",
        f"A conversation with the tall one in grey at {TAVERN}",
        "A conversation with the tall one in grey, the lady with brass buttons and the sailor "
        f"with the eye patch at {QUAY}",
        f"A scene at {QUAY}",
    ]
    assert "loc-" not in page.inner_text("#sessions-panel")
    assert "conv-" not in page.inner_text("#sessions-panel")
    # Screen readers hear who labels whom, by name.
    assert page.inner_text("label[for=label-npc-sable]") == "Label Pip Dunn uses for Sable Quint"
    assert (
        page.inner_text("label[for=label-5b0e6c1a-3f2d-4e8b-9a71-c4d2e8f90a13]")
        == "Label Pip Dunn uses for Isolde Varga"
    )
    # An edit enters the history by the person's name, not the id.
    page.fill("#label-npc-sable", "the woman in grey")
    page.click("#alias-npc-sable button[value=set]")
    entry = page.locator("#aliases-panel ol.alias-history li").first
    entry.wait_for()
    assert "— Sable Quint: “" in entry.inner_text()
    assert "npc-sable" not in entry.inner_text()
    assert serious_violations(page) == []
    screenshots("names-viewer")
    # QA mode asked for ids: the session keys stand beside the places.
    page.goto("/saves/demo/viewers/npc-pip/?qa=1")
    hints = page.locator("#sessions-panel table.sessions code.id-hint").all_inner_texts()
    assert hints == [
        "scene:loc-drowned-lantern",
        "conv-breakfast",
        "conv-standoff",
        "scene:loc-quay",
    ]
