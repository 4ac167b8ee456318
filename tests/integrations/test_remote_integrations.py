"""Every framework integration works on a remote ``Memory``: a real omnimem server on 127.0.0.1 behind it.

The stores (LangGraph, CrewAI, the OpenAI Agents session) write with ``Memory.put``, which a remote
``Memory`` sends as ``POST /v1/put``; their reads are the facade's ``units`` and ``search``. Each search
path of the integrations takes a trust floor (``min_trust``), here or over HTTP alike.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from omnimem import Memory
from omnimem.errors import ConfigError, InvalidInputError
from tests.serving import ServedMemory


@pytest.fixture
def remote(tmp_path: Path) -> Iterator[ServedMemory]:
    with ServedMemory(Memory(tmp_path / "served", embedder="fake"), mcp=False) as served:
        yield served


def test_a_langgraph_store_on_a_remote_memory_puts_gets_searches_and_deletes(remote: ServedMemory) -> None:
    pytest.importorskip("langgraph")
    from omnimem.integrations.langgraph import OmnimemStore

    store = OmnimemStore(memory=remote)
    store.put(("ann", "prefs"), "food", {"likes": "ramen noodles"})
    store.put(("ann", "prefs"), "food", {"likes": "pho with basil"})  # a new version supersedes the old
    store.put(("bob", "prefs"), "food", {"likes": "pho with lime"})
    item = store.get(("ann", "prefs"), "food")
    assert item is not None and item.value == {"likes": "pho with basil"} and item.namespace == ("ann", "prefs")
    assert [(i.namespace, i.key) for i in store.search(("ann",), query="pho")] == [(("ann", "prefs"), "food")]
    assert store.list_namespaces() == [("ann", "prefs"), ("bob", "prefs")]
    served = remote.backend.units(user_id="ann", include_superseded=True)
    assert len(served) == 2 and {u.surface for u in served} == {"http"}  # the server says how it arrived
    store.delete(("ann", "prefs"), "food")
    assert store.get(("ann", "prefs"), "food") is None
    assert remote.backend.count_units(user_id="ann", include_superseded=True) == 0  # every version gone
    assert store.get(("bob", "prefs"), "food") is not None


def test_an_openai_agents_session_on_a_remote_memory_keeps_the_conversation(remote: ServedMemory) -> None:
    pytest.importorskip("agents")
    from omnimem.integrations.openai_agents import OmnimemSession

    session = OmnimemSession(remote, session_id="chat", user_id="ana")
    other = OmnimemSession(remote, session_id="chat", user_id="ana")  # another object on the same conversation
    asyncio.run(session.add_items([{"role": "user", "content": "yes"}, {"role": "assistant", "content": "noted"}]))
    asyncio.run(other.add_items([{"role": "user", "content": "yes"}]))  # a repeat is kept: no novelty filter
    asyncio.run(session.add_items([{"type": "function_call_output", "call_id": "c1", "output": "sunny"}]))
    assert asyncio.run(session.get_items()) == [
        {"role": "user", "content": "yes"}, {"role": "assistant", "content": "noted"},
        {"role": "user", "content": "yes"}, {"type": "function_call_output", "call_id": "c1", "output": "sunny"}]
    units = sorted(remote.units(user_id="ana", session_id="chat"), key=lambda u: u.source_ids)
    assert [u.source_ids for u in units] == [("chat#0",), ("chat#1",), ("chat#2",), ("chat#3",)]
    assert [(u.source, u.trust) for u in units] == [("user", "trusted"), ("assistant", "trusted"),
                                                   ("user", "trusted"), ("tool", "untrusted")]
    assert asyncio.run(other.pop_item()) == {"type": "function_call_output", "call_id": "c1", "output": "sunny"}
    asyncio.run(session.clear_session())
    assert asyncio.run(other.get_items()) == [] and remote.count_units(user_id="ana") == 0


def test_a_put_over_http_whose_position_is_taken_stores_nothing(remote: ServedMemory) -> None:
    from omnimem.errors import StoreError

    first = remote.put([{"text": "zero", "id": "a" * 32}], user_id="ana")
    assert first[0].accepted and first[0].id == "a" * 32
    with pytest.raises(StoreError):
        remote.put([{"text": "one", "id": "b" * 32}, {"text": "again", "id": "a" * 32}], user_id="ana")
    assert [u.id for u in remote.units(user_id="ana")] == ["a" * 32]  # the whole call failed: one transaction


def test_a_crewai_storage_on_a_remote_memory_saves_searches_and_updates(remote: ServedMemory) -> None:
    pytest.importorskip("crewai", reason="crewai runs in its own venv: see docs/crewai.md")
    from crewai.memory.types import MemoryRecord

    from omnimem.integrations.crewai import OmnimemStorage

    storage = OmnimemStorage(remote, user_id="ana")
    record = MemoryRecord(content="the office moved to Lyon", scope="/office", embedding=[1.0, 0.0])
    storage.save([record, MemoryRecord(content="lunch at noon", scope="/office", embedding=[0.0, 1.0])])
    assert [r.content for r, _ in storage.search([1.0, 0.1], limit=1)] == ["the office moved to Lyon"]
    storage.update(record.model_copy(update={"content": "the office moved to Lille"}))
    kept = storage.get_record(record.id)
    assert kept is not None and kept.content == "the office moved to Lille" and storage.count() == 2
    storage.reset()
    assert storage.count() == 0 and remote.count_units(user_id="ana") == 0


@pytest.fixture
def kayaks(remote: ServedMemory) -> ServedMemory:
    """Ann's own words (trusted) and a tool's output about the same thing (untrusted), on the server."""
    remote.add("my kayak is red", user_id="ann")
    remote.add("kayak shop: every kayak is blue", source="tool", user_id="ann")
    return remote


def test_ask_takes_a_trust_floor_on_a_remote_memory(kayaks: ServedMemory) -> None:
    every = kayaks.ask("what colour is the kayak?", user_id="ann")
    assert {h.unit.trust for h in every.context.hits} == {"trusted", "untrusted"}
    trusted = kayaks.ask("what colour is the kayak?", user_id="ann", min_trust="trusted")
    assert [h.unit.summary for h in trusted.context.hits] == ["my kayak is red"]
    with pytest.raises(InvalidInputError, match="min_trust"):
        kayaks.ask("kayak?", user_id="ann", min_trust="somewhat")


def test_the_integrations_search_paths_take_a_trust_floor(kayaks: ServedMemory) -> None:
    from omnimem.integrations.langchain import OmnimemRetriever as LangChainRetriever
    from omnimem.integrations.llamaindex import OmnimemRetriever as LlamaIndexRetriever
    from omnimem.integrations.openai_agents import memory_tool

    docs = LangChainRetriever(memory=kayaks, user_id="ann", min_trust="trusted").invoke("kayak colour")
    assert [d.page_content for d in docs] == ["my kayak is red"] and docs[0].metadata["trust"] == "trusted"
    assert len(LangChainRetriever(memory=kayaks, user_id="ann").invoke("kayak colour")) == 2
    nodes = LlamaIndexRetriever(kayaks, user_id="ann", min_trust="trusted").retrieve("kayak colour")
    assert [n.node.get_content() for n in nodes] == ["my kayak is red"]
    from llama_index.core.base.llms.types import ChatMessage

    from omnimem.integrations.llamaindex import OmnimemMemoryBlock

    asked = [ChatMessage(role="user", content="what colour is my kayak?")]
    block = OmnimemMemoryBlock(memory=kayaks, user_id="ann", min_trust="trusted")
    assert "red" in asyncio.run(block.aget(asked)) and "blue" not in asyncio.run(block.aget(asked))
    assert "blue" in asyncio.run(OmnimemMemoryBlock(memory=kayaks, user_id="ann").aget(asked))
    from agents import Agent, RunConfig, Runner

    from tests.integrations.test_openai_agents import ScriptedModel, call, say

    for floor, seen in (("trusted", {"red"}), (None, {"red", "blue"})):
        model = ScriptedModel(lambda _: call("search_memory", query="kayak colour"),
                              lambda items: say(items[-1]["output"]))
        agent = Agent(name="a", model=model, tools=[memory_tool(kayaks, user_id="ann", min_trust=floor)])
        out = asyncio.run(Runner.run(agent, "my kayak?", run_config=RunConfig(tracing_disabled=True))).final_output
        assert {colour for colour in ("red", "blue") if colour in out} == seen
    with pytest.raises(ConfigError, match="min_trust"):  # a retriever's bad setting, when it is made
        LangChainRetriever(memory=kayaks, user_id="ann", min_trust="high")
    for make in (lambda: LlamaIndexRetriever(kayaks, user_id="ann", min_trust="high"),
                 lambda: memory_tool(kayaks, user_id="ann", min_trust="high")):
        with pytest.raises(InvalidInputError, match="min_trust"):  # when it is made, not at the first query
            make()


def test_a_langgraph_store_with_a_floor_finds_only_trusted_items(kayaks: ServedMemory) -> None:
    pytest.importorskip("langgraph")
    from omnimem.integrations.langgraph import OmnimemStore

    OmnimemStore(memory=kayaks).put(("ann",), "boat", {"note": "kayak paddles are green"})
    kayaks.set_trust(kayaks.units(user_id="ann", session_id="boat")[0].id, "untrusted", user_id="ann")
    assert OmnimemStore(memory=kayaks, min_trust="trusted").search(("ann",), query="kayak paddles") == []
    assert [i.key for i in OmnimemStore(memory=kayaks).search(("ann",), query="kayak paddles")] == ["boat"]


def test_the_adk_autogen_and_pydantic_ai_searches_take_a_trust_floor(kayaks: ServedMemory) -> None:
    found = []
    if _installed("google.adk"):
        from omnimem.integrations.adk import OmnimemMemoryService

        kayaks.add("adk: my kayak is red", user_id="ann", agent_id="app")
        kayaks.add("adk shop: every kayak is blue", source="tool", user_id="ann", agent_id="app")
        service = OmnimemMemoryService(kayaks, min_trust="trusted")
        found.append(service.search("kayak colour", app_name="app", user_id="ann"))
    if _installed("autogen_core"):
        from omnimem.integrations.autogen import OmnimemMemory

        found.append(OmnimemMemory(kayaks, user_id="ann", min_trust="trusted").search("kayak colour"))
    if _installed("pydantic_ai"):
        from pydantic_ai.messages import ModelRequest, UserPromptPart

        from omnimem.integrations.pydantic_ai import recall_processor

        recall = recall_processor(kayaks, user_id="ann", min_trust="trusted")
        messages = asyncio.run(recall([ModelRequest(parts=[UserPromptPart("what colour is my kayak?")])]))
        assert "red" in str(messages[0].parts[0].content) and "blue" not in str(messages[0].parts[0].content)
        with pytest.raises(InvalidInputError, match="min_trust"):
            recall_processor(kayaks, user_id="ann", min_trust="high")
    for ctx in found:
        assert ctx.hits and {h.unit.trust for h in ctx.hits} == {"trusted"} and "blue" not in ctx.render()


def _installed(module: str) -> bool:
    import importlib.util

    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        return False
