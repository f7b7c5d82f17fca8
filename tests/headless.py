"""Debian's headless Chromium driven by Playwright, for the tests that open a page we serve or write.

No browser is downloaded: the system's `chromium` runs (CI installs it). Its absence, or Playwright's,
fails the test with what to install: it is never a skip.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

CHROMIUM = "chromium"


def chromium_path(what: str) -> str:
    """Debian's chromium; `what` names the tests that need it, for the failure's message."""
    path = shutil.which(CHROMIUM)
    if path is None:
        pytest.fail(
            f"headless Chromium is needed for {what} and was not found on PATH: install it "
            "with `apt-get install -y chromium` (.ci/run does this when it is missing)",
            pytrace=False,
        )
    return path


@contextmanager
def launched_chromium(what: str) -> Iterator[Any]:
    """A headless Chromium browser, closed on exit."""
    executable = chromium_path(what)
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.fail(f"{what} drive Chromium with Playwright: pip install -e '.[test]'", pytrace=False)
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=executable, headless=True)
        try:
            yield launched
        finally:
            launched.close()
