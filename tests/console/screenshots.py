"""Take the README's screenshots of the web console from a live server.

    PYTHONPATH=. python -m tests.console.screenshots docs/images

Same store as the browser tests (sample conversation, generated images and
video), but on the real MiniLM embedder so the search shown is the real one.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from omnimem import Memory
from tests.console.live import USER, Console, build_store, launch_chromium, login, show
from tests.serving import LiveServer


def take(out: Path) -> list[Path]:
    from playwright.sync_api import sync_playwright

    from omnimem.store.apikeys import create_key

    out.mkdir(parents=True, exist_ok=True)
    shots: list[Path] = []
    with tempfile.TemporaryDirectory() as tmp, Memory(Path(tmp) / "store", graph=True) as memory:
        seeded = build_store(memory, Path(tmp))
        assert memory.flush(timeout=120)  # graph extraction is queued enrichment: let it land
        key = create_key(memory.store, name="screenshots", role="write", user_id=USER)[0]
        server = LiveServer(memory)
        try:
            console = Console(server.url, {"write": key}, seeded, memory)
            with sync_playwright() as playwright:
                browser = launch_chromium(playwright)
                for name, scheme, route, ready, full in [
                    ("console-timeline.png", "light", "timeline?since=2024-03-20T00:00", "ol.timeline", False),
                    ("console-search.png", "dark", "search?q=What+did+Alex+paint%3F&budget=200", "pre.rendered", True),
                    ("console-graph.png", "light", "graph/Priya", "svg.graph", False),
                ]:
                    context = browser.new_context(viewport={"width": 1280, "height": 860}, color_scheme=scheme)
                    page = context.new_page()
                    login(page, console, "write")
                    show(page, console, route)
                    page.locator(ready).wait_for()
                    page.evaluate("() => Promise.all([...document.images].map(i => i.decode().catch(() => null)))")
                    shots.append(out / name)
                    page.screenshot(path=str(shots[-1]), full_page=full)
                    context.close()
                browser.close()
        finally:
            server.stop()
    return shots


if __name__ == "__main__":
    for path in take(Path(sys.argv[1] if len(sys.argv) > 1 else "docs/images")):
        print(path)
