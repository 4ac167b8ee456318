"""Fixtures for the browser tests: Debian Chromium through Playwright, a live server over a seeded store.

Without Chromium or Playwright the tests skip with the reason; with
``OMNIMEM_REQUIRE_BROWSER=1`` (set by ``.ci/run``) that is a failure instead.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from omnimem import Memory
from tests.console.live import CHROMIUM, USER, Console, build_store, launch_chromium
from tests.serving import LiveServer


def _missing_browser() -> str | None:
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "playwright is not installed (pip install -e '.[test]')"
    if not (Path(CHROMIUM).exists() or shutil.which("chromium")):
        return f"Chromium not found at {CHROMIUM} (apt-get install chromium)"
    return None


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Chromium for one test module. Not session-wide: Playwright's sync API keeps an asyncio loop
    running in this thread while it is open, and later tests that start their own loop (uvicorn.run
    in the CLI's serve) would fail."""
    reason = _missing_browser()
    if reason:
        if os.environ.get("OMNIMEM_REQUIRE_BROWSER") == "1":
            pytest.fail(f"browser tests required (OMNIMEM_REQUIRE_BROWSER=1): {reason}")
        pytest.skip(reason)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = launch_chromium(playwright)
        yield chromium
        chromium.close()


@pytest.fixture(scope="module")
def console(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Console]:
    from omnimem.store.apikeys import create_key

    folder = tmp_path_factory.mktemp("console")
    with Memory(folder / "store", embedder="fake", graph=True) as memory:
        seeded = build_store(memory, folder)
        assert memory.flush(timeout=120)  # graph extraction is queued enrichment: let it land
        keys = {
            "admin": create_key(memory.store, name="console-admin", role="admin")[0],
            "write": create_key(memory.store, name="console-writer", role="write", user_id=USER)[0],
            "read": create_key(memory.store, name="console-reader", role="read", user_id=USER)[0],
        }
        server = LiveServer(memory)  # create_app(memory) with its defaults, as `omnimem serve` runs it
        try:
            yield Console(server.url, keys, seeded, memory)
        finally:
            server.stop()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    """A fresh browser context (no cookies); every JavaScript dialog is recorded and dismissed."""
    context = browser.new_context()
    tab = context.new_page()
    tab.dialogs = []  # type: ignore[attr-defined]

    def on_dialog(dialog: Any) -> None:
        tab.dialogs.append(dialog.message)  # type: ignore[attr-defined]
        dialog.dismiss()

    tab.on("dialog", on_dialog)
    tab.set_default_timeout(15_000)
    yield tab
    context.close()
