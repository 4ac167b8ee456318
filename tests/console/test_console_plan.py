"""The console's search shows what the retrieval planner did: its rounds, queries, reasons and cost."""

from __future__ import annotations

from typing import Any

from tests.console.live import Console, go, login


def test_search_with_the_offline_planner_shows_the_plan(page: Any, console: Console) -> None:
    login(page, console, "read")
    go(page, "Search")
    page.get_by_label("Query").fill("What did the pottery class teacher say?")
    page.get_by_label("Planner").select_option("offline")
    page.get_by_role("button", name="Search", exact=True).click()
    plan = page.locator("section.plan")
    plan.wait_for()
    assert plan.locator("h2").inner_text() == "Plan (offline)"
    rounds = plan.locator("ol li")
    assert rounds.count() >= 1
    assert "the question" in rounds.first.inner_text()
    assert "0 model call(s)" in plan.locator("p.hint").inner_text()
    assert "planner=offline" in page.url
    page.locator("table.hits tbody tr").first.wait_for()  # the hits still explain themselves below
