"""Every MCP tool through fastmcp's in-process Client, as the store's owner (no authorize)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from conftest import McpSession, connect

from omnimem import Memory
from omnimem.mcp import create_mcp

EXPECTED_TOOLS = {"add", "add_dialogue", "search", "recent", "ask", "get", "update", "delete", "forget", "history"}
GRAPH_TOOLS = {"entities", "neighbors"}  # listed only when the graph is on


def test_the_tool_list_is_complete_and_every_argument_is_described(owner: McpSession) -> None:
    tools = owner.tools()
    assert set(tools) == EXPECTED_TOOLS
    for name, tool in tools.items():
        assert tool.description and len(tool.description) > 80, name
        properties: dict[str, Any] = tool.input_schema["properties"]
        assert properties, name
        for arg, schema in properties.items():
            assert schema.get("description"), f"{name}.{arg} has no description"
        assert tool.output_schema and tool.output_schema["properties"], f"{name} publishes no output schema"


def test_output_schemas_describe_what_comes_back(owner: McpSession) -> None:
    search = owner.tools()["search"].output_schema
    assert set(search["properties"]) == {"context", "tokens", "budget", "hits", "plan"}  # plan: when one ran
    hit = search["properties"]["hits"]["items"]
    hit = search.get("$defs", {}).get(hit["$ref"].split("/")[-1], hit) if "$ref" in hit else hit
    assert "get, update, delete" in hit["properties"]["id"]["description"]
    get = owner.tools()["get"].output_schema["properties"]
    assert {"summary", "full_text", "superseded_by", "raw_uri", "metadata"} <= set(get)


def test_schemas_carry_the_limits_the_library_enforces(owner: McpSession, memory: Memory) -> None:
    tools = owner.tools()
    query = tools["search"].input_schema["properties"]["query"]
    assert query["maxLength"] == memory.settings.max_query_chars
    assert "At most this many memories" in tools["search"].input_schema["properties"]["top_k"]["description"]
    turn = tools["add_dialogue"].input_schema["properties"]["turns"]
    assert turn["minItems"] == 1 and turn["items"]["additionalProperties"] is False
    restate = tools["add_dialogue"].input_schema["properties"]["restate"]["description"]
    assert "language-model call per window of 40 turns" in restate
    assert tools["search"].annotations.read_only_hint is True
    assert tools["forget"].annotations.destructive_hint is True


def test_add_answers_with_the_stored_id_and_get_returns_it(owner: McpSession) -> None:
    added = owner.call("add", text="Alice prefers green tea in the morning", time="2024-05-08T08:00:00+00:00",
                       speaker="Alice", source_id="msg-1", metadata={"channel": "chat"}, user_id="alice")
    assert added["accepted"] is True and added["reason"] == "stored"

    unit = owner.call("get", unit_id=added["id"])
    assert unit["summary"] == "Alice prefers green tea in the morning"
    assert unit["full_text"] == unit["summary"]
    assert (unit["speaker"], unit["user_id"], unit["source_ids"]) == ("Alice", "alice", ["msg-1"])
    assert unit["event_time"] == "2024-05-08T08:00:00+00:00"
    assert unit["metadata"] == {"channel": "chat"}
    assert unit["raw_uri"] is None  # a short text is all there is

    again = owner.call("add", text="Alice prefers green tea in the morning", time="2024-05-08T08:00:00+00:00",
                       speaker="Alice", source_id="msg-1", user_id="alice")
    assert again["accepted"] is False and again["duplicate_of"] == added["id"]


def test_add_dialogue_stores_each_turn_in_order(owner: McpSession, memory: Memory) -> None:
    turns = [{"text": "I just moved to Lisbon", "speaker": "Bob", "time": "2024-06-01", "id": "t1"},
             {"text": "How do you like it?", "speaker": "Ana", "time": "2024-06-01", "id": "t2"},
             {"text": "The light is wonderful", "speaker": "Bob", "time": "2024-06-01", "id": "t3"}]
    results = owner.call("add_dialogue", turns=turns, user_id="bob", session_id="s1")["results"]
    assert [r["accepted"] for r in results] == [True, True, True]
    units = [memory.get(r["id"]) for r in results]
    assert [u.summary for u in units] == [t["text"] for t in turns]
    assert units[0].links.next_id == units[1].id and units[2].links.prev_id == units[1].id
    assert {u.session_id for u in units} == {"s1"}
    assert owner.call("add_dialogue", turns=turns, user_id="bob", session_id="s1")["results"][0]["accepted"] is False


def test_add_dialogue_with_restate_and_no_model_spells_out_speaker_and_date(owner: McpSession, memory: Memory) -> None:
    results = owner.call("add_dialogue", turns=[{"text": "I painted a sunset", "speaker": "Mel", "time": "2023-05-08"}],
                         restate=True, user_id="mel")["results"]
    assert "Mel said: I painted a sunset" in memory.get(results[0]["id"]).summary


def test_search_returns_the_rendered_context_with_ids_scores_and_sources(owner: McpSession) -> None:
    tea = owner.call("add", text="Alice drinks green tea every morning", user_id="alice")["id"]
    owner.call("add", text="The quarterly report is due on Friday", user_id="alice")
    found = owner.call("search", query="green tea", user_id="alice", top_k=5, budget=500)
    assert "Alice drinks green tea every morning" in found["context"]
    assert found["budget"] == 500 and 0 < found["tokens"] <= 500
    best = found["hits"][0]
    assert best["id"] == tea and best["rank"] == 1 and best["score"] > 0
    assert set(best["sources"]) <= {"dense", "sparse", "graph", "clip", "neighbour"} and best["sources"]
    assert owner.call("search", query="green tea", user_id="nobody")["hits"] == []


def test_ask_without_a_model_returns_the_evidence(owner: McpSession) -> None:
    unit = owner.call("add", text="The spare key is under the blue flowerpot", user_id="u")["id"]
    answer = owner.call("ask", question="Where is the spare key?", user_id="u")
    assert answer["answer"] is None and answer["note"]
    assert "blue flowerpot" in answer["context"]
    assert answer["evidence"][0]["id"] == unit


def test_update_supersedes_and_history_tells_the_story(owner: McpSession) -> None:
    old = owner.call("add", text="Carol lives in Berlin", user_id="carol")["id"]
    new = owner.call("update", unit_id=old, text="Carol lives in Munich", reason="she moved", user_id="carol")
    assert new["accepted"] is True and new["id"] != old
    assert owner.call("get", unit_id=old)["superseded_by"] == new["id"]
    context = owner.call("search", query="where does Carol live", user_id="carol")["context"]
    assert "Munich" in context and "Berlin" not in context

    events = owner.call("history", unit_id=old)["events"]
    assert [e["action"] for e in events] == ["add", "update"]
    assert events[1]["reason"] == "she moved" and events[1]["actor"] == "local:owner"


def test_delete_removes_the_unit_and_history_remains(owner: McpSession, memory: Memory) -> None:
    unit = owner.call("add", text="A secret I regret sharing", user_id="dan")["id"]
    assert owner.call("delete", unit_id=unit, reason="asked to", user_id="dan") == {"deleted": unit, "chain": False}
    assert owner.fail("get", unit_id=unit)["error"] == "NotFoundError"
    assert [e["action"] for e in owner.call("history", unit_id=unit)["events"]] == ["add", "delete"]
    assert memory.search("secret", user_id="dan").hits == ()


def test_forget_a_whole_user(owner: McpSession, memory: Memory) -> None:
    for text in ("Eve likes jazz", "Eve works at night", "Eve has a cat"):
        owner.call("add", text=text, user_id="eve")
    kept = owner.call("add", text="Frank likes jazz", user_id="frank")["id"]
    assert owner.call("forget", user_id="eve", reason="account closed") == {"forgotten": 3}
    assert memory.search("jazz", user_id="eve").hits == ()
    assert memory.get(kept).user_id == "frank"


def test_forget_by_ids_and_by_time(owner: McpSession) -> None:
    a = owner.call("add", text="Meeting notes from March", time="2024-03-01", user_id="g")["id"]
    owner.call("add", text="Meeting notes from April", time="2024-04-01", user_id="g")
    owner.call("add", text="Meeting notes from May", time="2024-05-01", user_id="g")
    assert owner.call("forget", unit_ids=[a]) == {"forgotten": 1}
    assert owner.call("forget", since="2024-04-15", until="2024-06-01", user_id="g") == {"forgotten": 1}
    remaining = owner.call("search", query="meeting notes", user_id="g")["hits"]
    assert len(remaining) == 1


def test_entities_and_neighbors_are_not_listed_when_the_graph_is_off(owner: McpSession, tmp_path: Path) -> None:
    assert not GRAPH_TOOLS & set(owner.tools())  # an agent is not offered tools that can only fail
    with Memory(tmp_path / "graph", embedder="fake", graph=True) as memory, connect(create_mcp(memory)) as graph:
        tools = graph.tools()
        assert set(tools) == EXPECTED_TOOLS | GRAPH_TOOLS
        for tool in GRAPH_TOOLS:
            assert tools[tool].description and len(tools[tool].description) > 80, tool
        assert graph.fail("neighbors", name="Alice", hops=11)["error"] == "InvalidInputError"


def test_entities_and_neighbors_over_the_knowledge_graph(tmp_path: Path) -> None:
    turns = [{"speaker": "Melanie", "text": "I painted a sunset last weekend with Caroline.", "time": "2023-05-08"},
             {"speaker": "Caroline", "text": "I went to a support group in Boston.", "time": "2023-05-08"}]
    with Memory(tmp_path / "graph", embedder="fake", graph=True, enrich="sync") as memory:  # graph rows at once
        with connect(create_mcp(memory)) as owner:
            owner.call("add_dialogue", turns=turns, user_id="u1")
            found = owner.call("entities", user_id="u1")["entities"]
            people = {e["name"] for e in found if e["type"] == "Person"}
            assert {"Melanie", "Caroline"} <= people
            assert owner.call("entities", user_id="someone-else") == {"entities": []}
            near = {n["entity"]["name"]: n for n in owner.call("neighbors", name="Caroline", hops=2,
                                                                user_id="u1")["neighbors"]}
            assert (near["Caroline"]["distance"], near["Caroline"]["score"]) == (0, 1.0)  # the entity itself
            assert near["Melanie"]["distance"] >= 1 and 0 < near["Melanie"]["score"] < 1


def test_search_top_k_bounds_the_hits_as_its_schema_says(owner: McpSession) -> None:
    described = owner.tools()["search"].input_schema["properties"]["top_k"]["description"]
    assert described.startswith("At most this many memories")  # the words HTTP docs and the CLI's --help use
    owner.call("add_dialogue", turns=[{"speaker": "Ann", "text": f"note {i} about the lighthouse"} for i in range(6)],
               user_id="alice", session_id="s")
    assert len(owner.call("search", query="lighthouse", user_id="alice")["hits"]) == 6
    assert len(owner.call("search", query="lighthouse", user_id="alice", top_k=1)["hits"]) == 1
