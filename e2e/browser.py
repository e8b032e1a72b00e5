"""A headless browser for the dashboard's tests: Debian's Chromium, driven by Playwright.

Why Playwright: it waits for what a test names (a selector, a row's text) and
reports the page's own errors, and its Python package carries its driver; the
browser is the system's (``executable_path``), installed by ``make browser``
(``apt-get install chromium``), never one it downloads. Chromium's own
``--headless --screenshot`` cannot wait for a live page: it never finishes
while the page's event stream is open.

Screenshots go to ``.e2e/artefacts/`` (kept after the run, ignored by git).
"""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from playwright.sync_api import Page

REPO = Path(__file__).resolve().parent.parent
ARTEFACTS = REPO / ".e2e" / "artefacts"
MISSING = (
    "Chromium is not installed: `make browser` installs Debian's package "
    "(apt-get install chromium, as root); the dashboard's browser tests drive it headless"
)


def chromium() -> str:
    path = shutil.which("chromium")
    if path is None:
        raise AssertionError(MISSING)
    return path


@contextlib.contextmanager
def page(width: int = 1400, height: int = 1000) -> Iterator[Page]:
    """A fresh page; any error the page's script raises fails the test at the end."""
    from playwright.sync_api import sync_playwright

    errors: list[str] = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium(), args=["--no-sandbox"])
        try:
            opened = browser.new_page(viewport={"width": width, "height": height})
            opened.on("pageerror", lambda error: errors.append(str(error)))
            yield opened
        finally:
            browser.close()
    assert not errors, f"the page's script failed: {errors}"


def screenshot(opened: Page, name: str) -> Path:
    """Save the whole page as ``.e2e/artefacts/NAME.png``; its path."""
    ARTEFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTEFACTS / f"{name}.png"
    opened.screenshot(path=str(path), full_page=True)
    print(f"screenshot: {path}")
    return path
