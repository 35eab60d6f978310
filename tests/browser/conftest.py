"""Playwright driving Debian's Chromium against pytest-django's live_server, through
pytest-playwright's own fixtures (`browser`, `context`, `page`): we only say which Chromium to
launch and where the site is, and record what a page should never do (console errors, dialogs).
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from urllib.parse import quote, urlsplit

import pytest
from playwright.sync_api import Error as PlaywrightError

from tests.helpers import DESIGNER_PASSWORD

# Playwright's sync API runs an event loop in this thread; Django's ORM calls from the test
# body are still synchronous and safe.
os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"

CHROMIUM = os.environ.get("OMNIA_CHROMIUM", "/usr/bin/chromium")
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
FAILED = ARTIFACTS / "failed"
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
def login(designer) -> Callable[..., None]:
    """login(page, url): sign in through the login form as the designer (the demo login as
    `make run` makes it), landing on url."""

    def sign_in(page, url: str) -> None:
        page.goto(f"/accounts/login/?next={quote(url, safe='/')}")
        page.fill("#id_username", designer.username)
        page.fill("#id_password", DESIGNER_PASSWORD)
        page.click("button[type=submit]")
        page.wait_for_url(lambda at: urlsplit(at).path == urlsplit(url).path)

    return sign_in


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    """A failing browser test leaves its page as it stood, full height at each of
    SCREENSHOT_WIDTHS, in test-artifacts/failed/<test>-<width>.png, whatever OMNIA_SCREENSHOTS
    says."""
    report = yield
    page = getattr(item, "funcargs", {}).get("page")
    if report.when == "call" and report.failed and page is not None and not page.is_closed():
        name = re.sub(r"[^\w.-]+", "-", item.name).strip("-")
        FAILED.mkdir(parents=True, exist_ok=True)
        for width, height in SCREENSHOT_WIDTHS:
            try:
                page.set_viewport_size({"width": width, "height": height})
                page.screenshot(path=str(FAILED / f"{name}-{width}.png"), full_page=True)
            except PlaywrightError:
                break  # the page itself is gone: the report says why
    return report


@pytest.fixture
def artifacts() -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS


def screenshots_requested() -> bool:
    """OMNIA_SCREENSHOTS=1 (`OMNIA_SCREENSHOTS=1 make test`): every page a test shoots is
    written, to look at; unset or 0, only a failing test's page is (pytest_runtest_makereport)."""
    value = os.environ.get("OMNIA_SCREENSHOTS", "0")
    if value not in ("0", "1"):
        raise pytest.UsageError(f"OMNIA_SCREENSHOTS must be 0 or 1, not {value!r}")
    return value == "1"


@pytest.fixture
def screenshots(page, artifacts) -> Callable[[str], list[Path]]:
    """shoot(name): with OMNIA_SCREENSHOTS=1, the page as it stands, full height, at each of
    SCREENSHOT_WIDTHS, saved as test-artifacts/<name>-<width>.png, the viewport put back
    afterwards; the paths written (none when screenshots were not asked for)."""

    def shoot(name: str) -> list[Path]:
        if not screenshots_requested():
            return []
        paths = []
        for width, height in SCREENSHOT_WIDTHS:
            page.set_viewport_size({"width": width, "height": height})
            path = artifacts / f"{name}-{width}.png"
            # caret="initial": hiding the caret injects a style this site's CSP refuses, and
            # the refusals then land in the console as if the page had made them.
            page.screenshot(path=str(path), full_page=True, caret="initial")
            paths.append(path)
        page.set_viewport_size(VIEWPORT)
        return paths

    return shoot
