"""The console's hit list: what ranked each hit first, its similarity second, and times as they were written.

A store of its own, searched through a live server in headless Chromium whose
clock is in Los Angeles: a time given without a zone must read as written
(the store keeps it on its UTC clock), not shifted to the day before, and the
same in the hit list as in "Context as the LLM sees it".
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest

from omnimem import Memory
from tests.console.live import Console, Seeded, show
from tests.serving import LiveServer

USER = "scores"
NO_SIGNALS = {"session_weight": 0.0, "speaker_weight": 0.0, "time_weight": 0.0}  # the order is the fused score's


@dataclass
class Scored:
    """The live console over this module's store, and the ids of its two timed memories."""

    console: Console
    naive_id: str  # added with time="2024-06-01"
    aware_id: str  # added with time="2024-06-02T09:30:00+02:00"

    @property
    def memory(self) -> Memory:
        return self.console.memory


@pytest.fixture(scope="module")
def scored(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Scored]:
    from omnimem.store.apikeys import create_key

    folder: Path = tmp_path_factory.mktemp("scores")
    with Memory(folder / "store", embedder="fake", **NO_SIGNALS, ranking="rules") as memory:
        naive = memory.add("We planted tomatoes in the garden plot.", speaker="Sam", time="2024-06-01",
                           user_id=USER, session_id="garden").id
        aware = memory.add("The tomatoes in the garden need water every morning.", speaker="Alex",
                           time="2024-06-02T09:30:00+02:00", user_id=USER, session_id="garden-2").id
        for i, text in enumerate(["Garden gloves are in the shed.", "A tomato soup recipe from grandma.",
                                  "The bus to the garden centre leaves at nine."]):
            memory.add(text, speaker="Sam", time=f"2024-06-0{3 + i}T12:00:00+00:00", user_id=USER,
                       session_id=f"misc-{i}")
        key = create_key(memory.store, name="scores-reader", role="read", user_id=USER)[0]
        server = LiveServer(memory)
        try:
            yield Scored(Console(server.url, {"read": key}, Seeded("", "", "", [], None), memory), naive, aware)
        finally:
            server.stop()


@pytest.fixture
def la_page(browser: Any) -> Iterator[Any]:
    """A browser tab whose clock is in Los Angeles (UTC-7 in June)."""
    context = browser.new_context(timezone_id="America/Los_Angeles")
    tab = context.new_page()
    tab.set_default_timeout(15_000)
    yield tab
    context.close()


def signed_in(page: Any, scored: Scored) -> None:
    page.goto(scored.console.url + "/")
    page.get_by_label("API key").fill(scored.console.keys["read"])
    page.get_by_role("button", name="Sign in").click()
    page.locator("ol.timeline").wait_for()


def hit_table(page: Any, scored: Scored, query: str, planner: str = "") -> Any:
    show(page, scored.console, "search?" + urlencode({"q": query, **({"planner": planner} if planner else {})}))
    table = page.locator("table.hits")
    table.locator("tbody tr").first.wait_for()
    return table


def test_the_fused_score_ranked_the_hits_and_is_shown_first_falling_row_by_row(la_page: Any,
                                                                               scored: Scored) -> None:
    signed_in(la_page, scored)
    table = hit_table(la_page, scored, "tomatoes in the garden")
    assert table.get_attribute("data-ranked-by") == "fused"
    assert "ranked by their fused score" in table.locator("caption").inner_text()
    headers = table.locator("thead th").all_inner_texts()
    assert headers[:3] == ["#", "fused", "similarity"]
    primary = [float(text) for text in table.locator("tbody tr [data-primary]").all_inner_texts()]
    rows = table.locator("tbody tr").count()
    assert len(primary) == rows >= 3
    assert primary == sorted(primary, reverse=True)  # what ranked them falls in rank order
    http = scored.memory.search("tomatoes in the garden", user_id=USER)
    assert primary == [round(h.fused or 0.0, 5) for h in sorted(http.hits, key=lambda h: h.rank)]
    similarity = [float(text) for text in table.locator("tbody tr td.secondary").all_inner_texts()]
    assert similarity == [round(h.similarity, 3) for h in sorted(http.hits, key=lambda h: h.rank)]


def test_a_planned_search_is_ranked_by_its_rank_which_is_shown_first(la_page: Any, scored: Scored) -> None:
    signed_in(la_page, scored)
    table = hit_table(la_page, scored, "What did Sam plant in the garden?", planner="offline")
    assert table.get_attribute("data-ranked-by") == "rank"
    assert "ranked by #" in table.locator("caption").inner_text()
    primary = [int(text) for text in table.locator("tbody tr [data-primary]").all_inner_texts()]
    assert primary == list(range(1, table.locator("tbody tr").count() + 1))


def test_a_time_given_without_a_zone_reads_as_written_in_a_browser_in_another_zone(la_page: Any,
                                                                                   scored: Scored) -> None:
    signed_in(la_page, scored)
    table = hit_table(la_page, scored, "tomatoes in the garden")
    naive = table.locator(f"tr[data-unit-id='{scored.naive_id}'] time").inner_text()
    aware = table.locator(f"tr[data-unit-id='{scored.aware_id}'] time").inner_text()
    assert naive == "2024-06-01 00:00 UTC"  # not "5/31/2024, 5:00 PM", the browser's clock
    assert aware == "2024-06-02 09:30 UTC+02:00"  # its own clock, and its zone
    rendered = la_page.get_by_label("rendered context").inner_text()
    assert "[2024-06-01 00:00]" in rendered and "[2024-06-02 09:30]" in rendered  # the same dates as the list
    show(la_page, scored.console, f"unit/{scored.naive_id}")
    assert "2024-06-01 00:00 UTC" in la_page.locator("main").inner_text()
