"""The MCP ``search`` tool's reply carries the retrieval plan when a planner ran, and nothing when none did."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from conftest import McpSession, connect

from omnimem import Memory
from omnimem.mcp import create_mcp

TURNS = [
    {"speaker": "Ann", "text": "My daughter Lily started piano lessons this spring.", "time": "2024-05-01T10:00"},
    {"speaker": "Bob", "text": "The seed packets arrived for the garden.", "time": "2024-05-01T10:01"},
    {"speaker": "Ann", "text": "Lily adores painting sunflowers and horses.", "time": "2024-05-09T10:00"},
    {"speaker": "Bob", "text": "I went hiking and camping last weekend.", "time": "2024-05-10T10:01"},
    {"speaker": "Bob", "text": "Fishing at the lake is my other weekend thing.", "time": "2024-05-20T10:01"},
]
QUESTION = "What are Bob's hobbies?"


def stored(session: McpSession) -> None:
    results = session.call("add_dialogue", turns=TURNS, user_id="u")["results"]
    assert [r["accepted"] for r in results] == [True] * len(TURNS)


def test_search_with_the_offline_planner_returns_each_round_and_the_cost(owner: McpSession, memory: Memory) -> None:
    stored(owner)
    reply = owner.call("search", query=QUESTION, user_id="u", planner="offline")
    plan = reply["plan"]
    expected = memory.search(QUESTION, user_id="u", planner="offline").plan
    assert expected is not None and plan["planner"] == "offline"
    assert plan["rounds"] == [{"queries": list(r.queries), "reason": r.reason} for r in expected.rounds]
    first, hop = plan["rounds"]
    assert first["queries"] == [QUESTION, "Bob hobbies"] and "aggregation cue 'hobbies'" in first["reason"]
    assert "second hop" in hop["reason"]
    assert (plan["calls"], plan["prompt_tokens"], plan["completion_tokens"], plan["note"]) == (0, 0, 0, None)
    assert {"search1", "hop", "search2", "pack"} <= set(plan["ms"])
    assert all(ms >= 0 for ms in plan["ms"].values())
    assert reply["tokens"] <= reply["budget"] and reply["hits"]


def test_search_without_a_planner_has_no_plan_in_its_reply(owner: McpSession) -> None:
    stored(owner)
    for arguments in ({}, {"planner": "none"}):
        reply = owner.call("search", query=QUESTION, user_id="u", **arguments)
        assert set(reply) == {"context", "tokens", "budget", "hits"}, arguments


def test_the_servers_planner_setting_plans_a_search_that_names_none(tmp_path: Path) -> None:
    with Memory(tmp_path / "store", embedder="fake", planner="offline") as memory, \
            connect(create_mcp(memory)) as session:
        stored(session)
        assert session.call("search", query=QUESTION, user_id="u")["plan"]["planner"] == "offline"
        assert "plan" not in session.call("search", query=QUESTION, user_id="u", planner="none")


def test_the_output_schema_describes_the_plan_as_optional(owner: McpSession) -> None:
    schema = owner.tools()["search"].output_schema
    assert "plan" in schema["properties"] and "plan" not in schema.get("required", [])
    plan = resolved(schema, schema["properties"]["plan"])
    assert "what the retrieval planner did" in plan["description"].lower()
    fields = plan["properties"]
    assert set(fields) == {"planner", "rounds", "calls", "prompt_tokens", "completion_tokens", "ms", "note"}
    assert all(field.get("description") for field in fields.values())
    assert set(resolved(schema, fields["rounds"]["items"])["properties"]) == {"queries", "reason"}


def resolved(schema: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    """A schema node, with a ``$ref`` to the schema's ``$defs`` followed (fastmcp may inline them or not)."""
    if "$ref" in node:
        return {**schema["$defs"][node["$ref"].split("/")[-1]], **{k: v for k, v in node.items() if k != "$ref"}}
    return node
