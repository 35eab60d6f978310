"""Playwright driving Debian's Chromium against pytest-django's live_server, through
pytest-playwright's own fixtures (`browser`, `context`, `page`): we only say which Chromium to
launch and where the site is, and record what a page should never do (console errors, dialogs).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

# Playwright's sync API runs an event loop in this thread; Django's ORM calls from the test
# body are still synchronous and safe.
os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"

CHROMIUM = os.environ.get("OMNIA_CHROMIUM", "/usr/bin/chromium")
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
VIEWPORT = {"width": 1600, "height": 1000}
# Every page a browser test visits is shot at these widths (desktop, wide, phone).
SCREENSHOT_WIDTHS = ((1440, 900), (1920, 1080), (390, 844))


def _chromium_or_fail() -> str:
    path = CHROMIUM if os.path.exists(CHROMIUM) else shutil.which("chromium")
    if path:
        return path
    message = f"Chromium not found at {CHROMIUM} (apt-get install chromium)"
    if os.environ.get("OMNIA_REQUIRE_BROWSER") == "1":
        pytest.fail(message)
    pytest.skip(message)


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args: dict) -> dict:
    return {
        **browser_type_launch_args,
        "executable_path": _chromium_or_fail(),
        "args": ["--no-sandbox"],
        "headless": True,
    }


@pytest.fixture(scope="session")
def browser_context_args(browser_context_args: dict, live_server) -> dict:
    return {**browser_context_args, "viewport": VIEWPORT, "base_url": live_server.url}


@pytest.fixture
def page(page):
    """pytest-playwright's page, recording console errors, page errors and dialogs."""
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
    return page


@pytest.fixture
def artifacts() -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS


@pytest.fixture
def screenshots(page, artifacts) -> Callable[[str], list[Path]]:
    """shoot(name): the page as it stands, full height, at each of SCREENSHOT_WIDTHS, saved as
    test-artifacts/<name>-<width>.png; the viewport is put back afterwards."""

    def shoot(name: str) -> list[Path]:
        paths = []
        for width, height in SCREENSHOT_WIDTHS:
            page.set_viewport_size({"width": width, "height": height})
            path = artifacts / f"{name}-{width}.png"
            page.screenshot(path=str(path), full_page=True)
            paths.append(path)
        page.set_viewport_size(VIEWPORT)
        return paths

    return shoot
