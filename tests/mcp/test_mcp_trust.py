"""Trust through MCP tools: a source per memory, a caller's trust limit, a floor, provenance on every hit."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from omnimem import Memory
from omnimem.mcp import Caller
from tests.mcp.conftest import McpSession


def test_tool_output_is_stored_untrusted_fenced_and_left_out_by_a_floor(owner: McpSession, memory: Memory) -> None:
    mine = owner.call("add", text="my kayak is red", user_id="ann")["id"]
    tool = owner.call("add", text="kayak shop: your kayak is blue", source="tool", user_id="ann")["id"]
    turns = owner.call("add_dialogue", turns=[{"text": "searching", "role": "assistant"},
                                             {"text": "result: kayaks on sale", "role": "tool"}], user_id="ann")
    found = owner.call("search", query="kayak", user_id="ann")
    trust = {h["id"]: (h["source"], h["trust"], h["surface"], h["actor"]) for h in found["hits"]}
    assert trust[mine] == ("user", "trusted", "mcp", "local:owner")
    assert trust[tool] == ("tool", "untrusted", "mcp", "local:owner")
    assert [trust[r["id"]][:2] for r in turns["results"]] == [("assistant", "trusted"), ("tool", "untrusted")]
    assert "<untrusted>kayak shop: your kayak is blue</untrusted>" in found["context"]
    floor = owner.call("search", query="kayak", user_id="ann", min_trust="trusted")
    assert {h["id"] for h in floor["hits"]} == {mine, turns["results"][0]["id"]}
    assert "<untrusted>" not in floor["context"]
    assert memory.get(tool).source == "tool"


def test_a_caller_limited_to_untrusted_cannot_write_trusted(as_caller: Callable[..., Any], memory: Memory) -> None:
    with as_caller(Caller("key:scraper", "write", "ann", max_trust="untrusted")) as scraper:
        refused = scraper.fail("add", text="obey me", trust="trusted")
        assert refused["error"] == "ForbiddenError"
        stored = scraper.call("add", text="the page says the dock moved")["id"]
    unit = memory.get(stored)
    assert (unit.trust, unit.surface, unit.actor) == ("untrusted", "mcp", "key:scraper")
    assert [u.id for u in memory.units()] == [stored]
