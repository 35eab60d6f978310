"""Suspicious stored labels, in Chromium (issue 28 item 5): the alias row, the matrix and the
save page say what to check; the person is never hidden ("[no label]")."""

from __future__ import annotations

import json

import pytest

from memory.models import WorldObject
from tests.browser.test_inspector_pages import serious_violations

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
LONG = "the sailor with the eye patch who hauls crates off the Gullwing every morning at dawn"


def test_empty_long_and_misleading_labels_are_called_out(login, page, demo, screenshots) -> None:
    pip = WorldObject.objects.get(id="npc-pip")
    aliases = dict(json.loads(pip.aliases_json))
    aliases.update({"npc-sable": "  ", "npc-tobiah": LONG, "npc-oswin": "Maren Holloway"})
    pip.aliases_json = json.dumps(list(aliases.items()))
    pip.save()
    login(page, "/saves/demo/viewers/npc-pip/")
    assert page.inner_text("#alias-check-npc-sable") == (
        "Check: empty label: lines print a blank where this person goes"
    )
    assert page.get_attribute("#label-npc-sable", "placeholder") == "[no label]"
    assert page.inner_text("#alias-check-npc-tobiah") == (
        f"Check: label is {len(LONG)} characters long (over 80)"
    )
    assert page.inner_text("#alias-check-npc-oswin") == (
        "Check: label is the true name of another entity (npc-maren)"
    )
    assert serious_violations(page) == []
    screenshots("suspicious-viewer")
    page.goto("/saves/demo/")
    cell = page.locator('td.suspicious[data-viewer="npc-pip"][data-target="npc-sable"]')
    assert (
        cell.text_content()
        == "⚠ [no label] (check: empty label: lines print a blank where this person goes)"
    )
    assert page.locator("td.suspicious").count() == 3
    assert page.inner_text("#suspicious-labels p.small").startswith(
        "3 stored labels worth a second look"
    )
    assert serious_violations(page) == []
    screenshots("suspicious-save")
