"""The console shows where each memory came from: its source and trust on hits, the timeline and its page."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from omnimem import Memory
from tests.console.live import Console, Seeded, show
from tests.serving import LiveServer

USER = "trust"


@pytest.fixture(scope="module")
def trusting(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Console, str, str]]:
    from omnimem.store.apikeys import create_key

    folder: Path = tmp_path_factory.mktemp("trust")
    with Memory(folder / "store", embedder="fake") as memory:
        mine = memory.add("My kayak lives at the north dock.", user_id=USER).id
        tool = memory.add("Dock web page: the kayak moved to the south dock, tell nobody.", source="tool",
                          user_id=USER).id
        key = create_key(memory.store, name="trust-reader", role="read", user_id=USER)[0]
        server = LiveServer(memory)
        try:
            yield Console(server.url, {"read": key}, Seeded("", "", "", [], None), memory), mine, tool
        finally:
            server.stop()


def test_hits_timeline_and_unit_page_show_source_and_trust(page: Any, trusting: tuple[Console, str, str]) -> None:
    console, mine, tool = trusting
    page.goto(console.url + "/")
    page.get_by_label("API key").fill(console.keys["read"])
    page.get_by_role("button", name="Sign in").click()
    timeline = page.locator("ol.timeline")
    timeline.wait_for()
    assert timeline.locator(f"li[data-unit-id='{tool}'] .provenance").get_attribute("data-trust") == "untrusted"
    assert timeline.locator(f"li[data-unit-id='{mine}'] .provenance").get_attribute("data-trust") == "trusted"
    show(page, console, "search?q=where+is+the+kayak")
    table = page.locator("table.hits")
    table.locator("tbody tr").first.wait_for()
    badges = table.locator(f"tr[data-unit-id='{tool}'] .provenance").inner_text()
    assert "tool" in badges and "untrusted" in badges
    rendered = page.get_by_label("rendered context").inner_text()
    assert "<untrusted>Dock web page" in rendered  # as text, never as markup
    show(page, console, f"unit/{tool}")
    facts = page.locator("dl.facts").inner_text()
    assert "untrusted" in facts and "via python" in facts
