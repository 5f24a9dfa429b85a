"""What the console's browser tests share: Debian's Chromium, driven by Playwright."""

import os

import pytest
from playwright.sync_api import sync_playwright

CHROMIUM = os.environ.get("CAIRNLOOP_CHROMIUM", "/usr/bin/chromium")


@pytest.fixture(scope="module")
def browser():
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(
            executable_path=CHROMIUM, args=["--no-sandbox", "--disable-dev-shm-usage"]
        )
        yield chromium
        chromium.close()
