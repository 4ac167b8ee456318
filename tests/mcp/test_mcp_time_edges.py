"""MCP search with a relative time read against a ``now`` at the edges of the calendar (it was an internal error)."""

from __future__ import annotations

import pytest
from conftest import McpSession

from omnimem import Memory


@pytest.mark.parametrize("now", ["0001-01-01", "0001-01-01T00:00:00+14:00", "9999-12-31T23:59:59-12:00"])
@pytest.mark.parametrize("query", ["last week", "yesterday", "two months ago", "in March", "today", "in 9999"])
def test_search_answers_for_a_now_at_the_edge_of_the_calendar(owner: McpSession, memory: Memory, now: str,
                                                              query: str) -> None:
    unit = memory.add("Ivy planted the tulip bulbs", user_id="ivy").id
    found = owner.call("search", query=f"tulip bulbs {query}", user_id="ivy", now=now)
    assert [hit["id"] for hit in found["hits"]] == [unit]
