"""The MCP ask tool takes the same trust floor as search; get returns a unit's full text."""

from __future__ import annotations

from tests.mcp.conftest import McpSession


def test_ask_with_a_floor_answers_from_trusted_memories_only(owner: McpSession) -> None:
    mine = owner.call("add", text="my kayak is red", user_id="ann")["id"]
    owner.call("add", text="kayak shop: every kayak is blue", source="tool", user_id="ann")
    every = owner.call("ask", question="what colour is the kayak?", user_id="ann")
    assert len(every["evidence"]) == 2 and "<untrusted>" in every["context"]
    floor = owner.call("ask", question="what colour is the kayak?", user_id="ann", min_trust="trusted")
    assert [e["id"] for e in floor["evidence"]] == [mine] and "blue" not in floor["context"]
    assert owner.fail("ask", question="kayak?", user_id="ann", min_trust="high")["error"]


def test_get_returns_a_long_memorys_full_text(owner: McpSession) -> None:
    long = " ".join(f"word{i}" for i in range(3000))
    unit_id = owner.call("add", text=long, user_id="ann")["id"]
    assert owner.call("get", unit_id=unit_id, user_id="ann")["full_text"] == long
