"""Playwright driving Debian's Chromium against pytest-django's live_server."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

# Playwright's sync API runs an event loop in this thread; Django's ORM calls from the test
# body are still synchronous and safe.
os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"

CHROMIUM = os.environ.get("OMNIA_CHROMIUM", "/usr/bin/chromium")
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"


def _chromium_or_fail() -> str:
    path = CHROMIUM if os.path.exists(CHROMIUM) else shutil.which("chromium")
    if path:
        return path
    message = f"Chromium not found at {CHROMIUM} (apt-get install chromium)"
    if os.environ.get("OMNIA_REQUIRE_BROWSER") == "1":
        pytest.fail(message)
    pytest.skip(message)


@pytest.fixture(scope="session")
def chromium():
    path = _chromium_or_fail()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=path, args=["--no-sandbox"], headless=True)
        yield browser
        browser.close()


@pytest.fixture
def artifacts() -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS


@pytest.fixture
def inspector_page(chromium, live_server):
    """A fresh page that records console errors, page errors and dialogs."""
    context = chromium.new_context(
        viewport={"width": 1600, "height": 1000}, base_url=live_server.url
    )
    page = context.new_page()
    page.console_errors = []
    page.dialogs = []
    page.on(
        "console", lambda msg: page.console_errors.append(msg.text) if msg.type == "error" else None
    )
    page.on("pageerror", lambda exc: page.console_errors.append(str(exc)))

    def on_dialog(dialog) -> None:
        page.dialogs.append(dialog.message)
        dialog.dismiss()

    page.on("dialog", on_dialog)
    yield page
    context.close()
