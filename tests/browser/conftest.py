"""Fixtures for the widget tests in a real browser: one JupyterLab server per test
session (per xdist worker), one headless Debian chromium driven by Playwright's sync
API, and a fresh page per test. A server or browser that does not start fails the
test; nothing here skips.

Playwright's sync API refuses to run inside a running asyncio loop, and while it is
started it leaves its own loop marked running in this thread, so that any
``asyncio.run`` (an async test of another file on the same xdist worker) fails with
"cannot be called from a running event loop". Hence the browser is per test module,
not per session: these are plain sync tests, and with ``--dist loadfile`` a module's
tests run together, so Playwright is stopped before the worker's next file.
"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import sync_playwright

from .lab import CHROMIUM, Lab, LabServer

#: The width the widget tests check at unless they say otherwise (issue 45: 1400–1500 px).
VIEWPORT = {"width": 1400, "height": 1000}


@pytest.fixture(scope="session")
def lab_server(tmp_path_factory):
    server = LabServer(tmp_path_factory.mktemp("jupyterlab")).start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def chromium():
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True)
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture
def open_lab(lab_server, chromium, request):
    """A factory: ``open_lab(width=1400)`` → a Lab on a new page of that viewport width
    (a new browser context each, and a folder of the test's own under the server's root,
    so nothing carries over between tests). Closed at teardown."""
    contexts = []
    folder = re.sub(r"[^A-Za-z0-9_.-]+", "-", request.node.name)

    def factory(width: int = VIEWPORT["width"], height: int = VIEWPORT["height"]) -> Lab:
        context = chromium.new_context(viewport={"width": width, "height": height})
        contexts.append(context)
        page = context.new_page()
        page.set_default_timeout(120_000)
        return Lab(lab_server, page, folder)

    yield factory
    for context in contexts:
        context.close()
