"""Issue 15 item 8 (part): the 404 page is the site's own, with its header, navigation and
the message, at every width."""

from __future__ import annotations

import pytest

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("cast"),
]


def test_404_page_has_the_site_header_navigation_and_message(login, page, screenshots) -> None:
    login(page, "/")
    response = page.goto("/viewers/nobody/")
    assert response.status == 404
    assert page.locator(".site-header nav a", has_text="Overview").is_visible()
    assert page.locator("#error-title").inner_text().startswith("Not found")
    assert "no entity with id 'nobody'" in page.locator(".error-page .error").inner_text()
    screenshots("error-404")
    page.click("text=Back to the overview")
    page.wait_for_url("**/")
    # The one console line is the browser noting the page's own 404 status.
    assert [e for e in page.console_errors if "404 (Not Found)" not in e] == []
