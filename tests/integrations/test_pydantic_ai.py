"""Pydantic AI's own ``Agent`` runs with omnimem's memory tools and its recall history processor.

The models are Pydantic AI's ``FunctionModel`` (a function scripts each answer and sees the exact
messages the agent hands the model) and ``TestModel`` (calls every tool with arguments from their
schemas): no network. The memories live in a real ``Memory``: in memory, a folder, PostgreSQL and a
live server through ``Memory(url="http://...")``.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from pydantic_ai import Agent
from pydantic_ai.capabilities import ProcessHistory
from pydantic_ai.messages import (
    ModelMessage, ModelRequest, ModelResponse, SystemPromptPart, TextPart, ToolCallPart,
    ToolReturnPart, UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.test import TestModel

from omnimem import Memory
from omnimem.errors import ConfigError, InvalidInputError, MissingDependencyError
from omnimem.integrations.pydantic_ai import HEADING, memory_tools, recall_processor, recalled
from tests.serving import ServedMemory


@pytest.fixture
def mem(tmp_path: Path) -> Iterator[Memory]:
    with Memory(tmp_path / "m", embedder="fake") as m:
        m.add("I am allergic to peanuts.", user_id="ana", speaker="ana", time="2024-05-01T12:00")
        m.add("I keep bees on the roof.", user_id="bob", speaker="bob", time="2024-05-02T09:30")
        yield m


class Script:
    """A FunctionModel's function: plays ``turns`` (a tool call or a text) in order, keeps what it was shown."""

    def __init__(self, *turns: ToolCallPart | str) -> None:
        self.turns = list(turns)
        self.seen: list[list[ModelMessage]] = []

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.seen.append(list(messages))
        turn = self.turns.pop(0)
        return ModelResponse(parts=[TextPart(turn) if isinstance(turn, str) else turn])

    def returns(self, call: int) -> list[ToolReturnPart]:
        """The tool returns in the last request of model call ``call``."""
        last = self.seen[call][-1]
        assert isinstance(last, ModelRequest)
        return [p for p in last.parts if isinstance(p, ToolReturnPart)]


def search(query: str) -> ToolCallPart:
    return ToolCallPart("search_memory", {"query": query})


def test_the_model_reads_the_rendered_memories_and_the_app_keeps_each_hits_metadata(mem: Memory) -> None:
    script = Script(search("food allergy peanuts"), "Avoid peanuts.")
    agent = Agent(FunctionModel(script), toolsets=[memory_tools(mem, user_id="ana")])
    assert agent.run_sync("What should I avoid eating?").output == "Avoid peanuts."
    [returned] = script.returns(1)
    assert returned.content == "[2024-05-01 12:00]\nana: I am allergic to peanuts."
    [hit] = returned.metadata["omnimem"]
    assert hit["text"] == "ana: I am allergic to peanuts." and hit["speaker"] == "ana" and hit["rank"] == 1
    assert hit["time"] == "2024-05-01T12:00:00+00:00" and hit["modality"] == "text" and hit["level"] == 1
    assert hit["id"] == mem.units(user_id="ana")[0].id
    assert hit["sources"] and hit["fused"] is not None and hit["similarity"] > 0 and hit["tokens"] > 0


def test_add_memory_keeps_a_fact_in_the_toolsets_scope_and_a_repeat_is_not_stored(mem: Memory) -> None:
    fact = ToolCallPart("add_memory", {"text": "My sister is called Rita."})
    script = Script(fact, "ok", fact, "ok")
    agent = Agent(FunctionModel(script), toolsets=[memory_tools(mem, user_id="ana", agent_id="helper",
                                                                session_id="s1", speaker="ana")])
    agent.run_sync("Remember my sister.")
    agent.run_sync("Remember my sister again.")
    assert script.returns(1)[0].content.startswith("Remembered (id ")
    assert script.returns(3)[0].content.startswith("Not stored: ")
    [unit] = [u for u in mem.units(user_id="ana") if "Rita" in u.summary]
    assert (unit.speaker, unit.scope.agent_id, unit.scope.session_id) == ("ana", "helper", "s1")
    assert script.returns(1)[0].metadata["omnimem"]["id"] == unit.id


def test_testmodel_calls_both_tools_through_their_schemas(mem: Memory) -> None:
    result = Agent(TestModel(), toolsets=[memory_tools(mem, user_id="cy")]).run_sync("hello")
    assert set(json.loads(result.output)) == {"search_memory", "add_memory"}
    assert [u.scope.user_id for u in mem.units(user_id="cy")] == ["cy"]  # what TestModel made up, in cy's scope


def test_recall_puts_the_memories_before_the_prompt_once_per_run(mem: Memory) -> None:
    script = Script(search("peanuts"), "Avoid peanuts.")
    agent = Agent(FunctionModel(script), instructions="Be brief.", toolsets=[memory_tools(mem, user_id="ana")],
                  capabilities=[ProcessHistory(recall_processor(mem, user_id="ana"))])
    result = agent.run_sync("What should I avoid eating? peanuts?")
    first = script.seen[0][0]
    assert isinstance(first, ModelRequest)
    assert [type(p) for p in first.parts] == [SystemPromptPart, UserPromptPart]
    part = first.parts[0]
    assert part.content == f"{HEADING}\n[2024-05-01 12:00]\nana: I am allergic to peanuts."
    held = recalled(part)
    assert held is not None and held["query"] == "What should I avoid eating? peanuts?"
    assert [(h["speaker"], h["rank"], h["time"]) for h in held["hits"]] == [("ana", 1, "2024-05-01T12:00:00+00:00")]
    # after the tool call the model sees the same single recall part, and the run's history keeps it
    parts = [p for m in script.seen[1] if isinstance(m, ModelRequest) for p in m.parts]
    assert sum(recalled(p) is not None for p in parts) == 1
    assert sum(recalled(p) is not None for m in result.all_messages() for p in m.parts) == 1

    # a later run's prompt gets its own recall (ana's memories, not bob's bees), kept beside the first one
    follow = Script("No bees.")
    again = Agent(FunctionModel(follow), capabilities=[ProcessHistory(recall_processor(mem, user_id="ana"))]).run_sync(
        "Do I keep bees on the roof?", message_history=result.all_messages())
    kept = [held for m in again.all_messages() for p in m.parts if (held := recalled(p)) is not None]
    assert [k["query"] for k in kept] == ["What should I avoid eating? peanuts?", "Do I keep bees on the roof?"]
    shown = str(follow.seen[0][-1].parts)  # Pydantic AI frames a system part after the first request as <system>
    assert "ana: I am allergic to peanuts." in shown and "bob" not in shown


def test_nothing_found_leaves_the_messages_as_they_were(mem: Memory) -> None:
    script = Script("hi")
    Agent(FunctionModel(script), capabilities=[ProcessHistory(recall_processor(mem, user_id="zoe"))]).run_sync("hi")
    assert [type(p) for m in script.seen[0] for p in m.parts] == [UserPromptPart]


def test_a_long_paste_is_clipped_to_its_newest_words(mem: Memory) -> None:
    script = Script("ok")
    agent = Agent(FunctionModel(script), capabilities=[ProcessHistory(recall_processor(mem, user_id="ana"))])
    agent.run_sync("log line ok " * 3000 + "what am I allergic to, peanuts?")
    held = recalled(script.seen[0][0].parts[0])
    assert held is not None and len(held["query"]) <= mem.settings.max_query_chars
    assert held["query"].endswith("what am I allergic to, peanuts?") and held["query"].split()[0] in {"log", "line", "ok"}


def test_over_a_remote_memory(tmp_path: Path) -> None:
    with ServedMemory(Memory(tmp_path / "m", embedder="fake"), mcp=False) as remote:
        remote.add("I keep bees on the roof.", user_id="bob", speaker="bob", time="2024-05-02T09:30")
        script = Script(ToolCallPart("add_memory", {"text": "My hives are blue."}), "ok")
        agent = Agent(FunctionModel(script), toolsets=[memory_tools(remote, user_id="bob")],
                      capabilities=[ProcessHistory(recall_processor(remote, user_id="bob"))])
        agent.run_sync("Tell me about my bees on the roof. " + "x " * 15000)  # past the server's query limit
        held = recalled(script.seen[0][0].parts[0])
        assert held is not None and held["hits"][0]["text"] == "bob: I keep bees on the roof."
        assert sorted(u.summary for u in remote.units(user_id="bob")) == ["I keep bees on the roof.",
                                                                          "My hives are blue."]


def test_tools_and_recall_on_every_engine(make_memory: Callable[..., Memory]) -> None:
    memory = make_memory()
    memory.add("my bike is green", user_id="ana", speaker="ana")
    memory.add("my car is red", user_id="bob", speaker="bob")
    script = Script(search("what colour is my car"), "red")
    agent = Agent(FunctionModel(script), toolsets=[memory_tools(memory, user_id="bob")],
                  capabilities=[ProcessHistory(recall_processor(memory, user_id="bob"))])
    agent.run_sync("what colour is my car")
    assert "bob: my car is red" in script.seen[0][0].parts[0].content
    assert script.returns(1)[0].content.endswith("bob: my car is red")
    assert "bike" not in script.returns(1)[0].content


def test_a_scope_is_explicit(mem: Memory) -> None:
    for make in (memory_tools, recall_processor):
        for unscoped in ({}, {"agent_id": "bot"}, {"session_id": "s1"}):
            with pytest.raises(ConfigError, match="all_users=True"):
                make(mem, **unscoped)  # type: ignore[operator]
        with pytest.raises(ConfigError, match="not both"):
            make(mem, user_id="ana", all_users=True)  # type: ignore[operator]
    with pytest.raises(ConfigError, match="add=False"):
        memory_tools(mem, all_users=True)
    script = Script(search("peanuts bees roof"), "ok")
    Agent(FunctionModel(script), toolsets=[memory_tools(mem, all_users=True, add=False)]).run_sync("anything")
    seen = script.returns(1)[0].content
    assert "ana: I am allergic to peanuts." in seen and "bob: I keep bees on the roof." in seen
    everyone = Script("ok")
    Agent(FunctionModel(everyone), capabilities=[ProcessHistory(recall_processor(mem, all_users=True))]).run_sync(
        "peanuts and bees on the roof")
    assert {h["speaker"] for h in recalled(everyone.seen[0][0].parts[0])["hits"]} == {"ana", "bob"}  # type: ignore[index]


def test_only_the_search_tool_with_add_false(mem: Memory) -> None:
    tools: list[str] = []

    def look(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        tools.extend(t.name for t in info.function_tools)
        return ModelResponse(parts=[TextPart("ok")])

    Agent(FunctionModel(look), toolsets=[memory_tools(mem, user_id="ana", add=False)]).run_sync("hi")
    assert tools == ["search_memory"]


def test_bad_input_from_the_model_goes_back_to_it_as_a_retry(mem: Memory) -> None:
    script = Script(search("   "), search("peanuts"), "ok")
    Agent(FunctionModel(script), toolsets=[memory_tools(mem, user_id="ana")]).run_sync("hi")
    [retry] = script.returns(1)
    assert (retry.content, retry.outcome) == ("query is empty", "retried")
    assert script.returns(2)[0].content.endswith("ana: I am allergic to peanuts.")


def test_bad_ids_fail_when_the_tools_are_made(mem: Memory) -> None:
    for bad in ({"user_id": " "}, {"user_id": "ana", "agent_id": ""}, {"user_id": "ana", "session_id": 3}):
        for make in (memory_tools, recall_processor):
            with pytest.raises(InvalidInputError):
                make(mem, **bad)  # type: ignore[operator]


def test_without_the_extra_the_error_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(sys.modules, "omnimem.integrations.pydantic_ai", raising=False)
    monkeypatch.setitem(sys.modules, "pydantic_ai", None)  # as if pydantic-ai-slim were missing
    with pytest.raises(MissingDependencyError, match=r"pip install 'omnimem\[pydantic-ai\]'"):
        import omnimem.integrations.pydantic_ai  # noqa: F401
