"""The OpenAI Agents SDK's own ``Runner`` keeps its conversation in omnimem and calls omnimem's memory tool.

The agent's model is scripted (the SDK's ``Model`` interface, no network): it answers from what the
runner hands it, so the tests see what the session gave the model and what the tool returned.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from agents import Agent, Model, ModelResponse, ModelSettings, RunConfig, Runner, Usage
from agents.memory import Session, SessionSettings
from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText

from omnimem import Memory
from omnimem.errors import ConfigError, InvalidInputError, MissingDependencyError
from omnimem.integrations.openai_agents import OmnimemSession, item_text, memory_tool
from tests.serving import ServedMemory

Reply = Callable[[list[Any]], Any]  # what the model answers, given the input items it was handed


def say(text: str) -> ResponseOutputMessage:
    return ResponseOutputMessage(id="msg", type="message", role="assistant", status="completed",
                                 content=[ResponseOutputText(type="output_text", text=text, annotations=[])])


def call(name: str, **arguments: Any) -> ResponseFunctionToolCall:
    return ResponseFunctionToolCall(type="function_call", call_id=f"call-{name}", name=name,
                                    arguments=json.dumps(arguments))


class ScriptedModel(Model):
    """Answers each request with the next scripted reply; keeps the input items of every request."""

    def __init__(self, *replies: Reply) -> None:
        self.replies = list(replies)
        self.inputs: list[list[Any]] = []

    async def get_response(self, system_instructions: Any, input: Any, model_settings: Any, tools: Any,
                           output_schema: Any, handoffs: Any, tracing: Any, **_: Any) -> ModelResponse:
        items = [{"role": "user", "content": input}] if isinstance(input, str) else list(input)
        self.inputs.append(items)
        return ModelResponse(output=[self.replies.pop(0)(items)], usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        raise NotImplementedError("the tests run the agent without streaming")


def run(agent: Agent[Any], text: str, session: Session) -> Any:
    return asyncio.run(Runner.run(agent, text, session=session, run_config=RunConfig(tracing_disabled=True)))


@pytest.fixture
def mem(tmp_path: Path) -> Iterator[Memory]:
    with Memory(tmp_path / "m", embedder="fake") as m:
        yield m


def test_the_runner_keeps_the_conversation_in_omnimem(mem: Memory) -> None:
    model = ScriptedModel(lambda _: say("Nice to meet you, Ana."), lambda _: say("You live in Lisbon."))
    agent = Agent(name="assistant", instructions="Be brief.", model=model)
    session = OmnimemSession(mem, session_id="chat-1", user_id="ana")

    run(agent, "Hi, I am Ana and I live in Lisbon.", session)
    result = run(agent, "Where do I live?", session)

    assert result.final_output == "You live in Lisbon."
    second = model.inputs[1]  # the session handed the first exchange to the model, in order
    assert [item_text(i) for i in second] == ["Hi, I am Ana and I live in Lisbon.", "Nice to meet you, Ana.",
                                              "Where do I live?"]
    items = asyncio.run(session.get_items())
    assert [item_text(i) for i in items] == [*map(item_text, second), "You live in Lisbon."]
    assert items[1]["role"] == "assistant" and items[1]["content"][0]["type"] == "output_text"
    found = mem.search("where does Ana live Lisbon", user_id="ana", session_id="chat-1")
    assert "Hi, I am Ana and I live in Lisbon." in found.render()


ITEMS: list[Any] = [
    {"role": "user", "content": "book a table for two"},
    {"role": "user", "content": "book a table for two"},  # a repeat is a turn of its own
    {"type": "function_call", "call_id": "c1", "name": "book", "arguments": '{"people": 2}', "id": "fc1",
     "status": "completed"},
    {"type": "function_call_output", "call_id": "c1", "output": "booked at 8pm, table 12"},
    {"type": "reasoning", "id": "r1", "summary": [{"type": "summary_text", "text": "confirm the time"}]},
    {"id": "m1", "type": "message", "role": "assistant", "status": "completed",
     "content": [{"type": "output_text", "text": "Booked: 8pm.", "annotations": [], "logprobs": []}]},
]


def test_items_round_trip_exactly_and_pop_and_clear(mem: Memory) -> None:
    session = OmnimemSession(mem, session_id="s", user_id="ana")
    asyncio.run(session.add_items(ITEMS[:3]))
    asyncio.run(session.add_items(ITEMS[3:]))

    assert asyncio.run(session.get_items()) == ITEMS
    assert asyncio.run(session.get_items(limit=2)) == ITEMS[-2:]
    assert asyncio.run(session.get_items(limit=0)) == []
    assert asyncio.run(session.get_items(limit=len(ITEMS) + 2)) == ITEMS  # more than there are: all
    limited = OmnimemSession(mem, session_id="s", user_id="ana", session_settings=SessionSettings(limit=1))
    assert asyncio.run(limited.get_items()) == ITEMS[-1:]
    assert "table 12" in mem.search("which table was booked", user_id="ana").render()

    assert asyncio.run(session.pop_item()) == ITEMS[-1]
    asyncio.run(session.add_items([ITEMS[-1]]))  # popped, then added again: stored again, at the end
    assert asyncio.run(session.get_items()) == ITEMS
    asyncio.run(session.clear_session())
    assert asyncio.run(session.get_items()) == [] and asyncio.run(session.pop_item()) is None
    assert mem.units(user_id="ana") == []


def test_two_users_sessions_never_meet(mem: Memory) -> None:
    ana = OmnimemSession(mem, session_id="same-id", user_id="ana")
    bob = OmnimemSession(mem, session_id="same-id", user_id="bob")
    ana_agent = OmnimemSession(mem, session_id="same-id", user_id="ana", agent_id="planner")
    run(Agent(name="a", model=ScriptedModel(lambda _: say("noted, ana"))), "my locker code is 4411", ana)
    bob_model = ScriptedModel(lambda _: say("noted, bob"))
    run(Agent(name="b", model=bob_model), "what is my locker code?", bob)
    asyncio.run(ana_agent.add_items([{"role": "user", "content": "planner note"}]))

    assert [item_text(i) for i in bob_model.inputs[0]] == ["what is my locker code?"]  # nothing of ana's
    assert [item_text(i) for i in asyncio.run(bob.get_items())] == ["what is my locker code?", "noted, bob"]
    assert [item_text(i) for i in asyncio.run(ana.get_items())] == ["my locker code is 4411", "noted, ana"]
    assert "4411" not in mem.search("locker code", user_id="bob").render()

    asyncio.run(bob.pop_item())
    asyncio.run(ana_agent.clear_session())
    asyncio.run(bob.clear_session())
    assert [item_text(i) for i in asyncio.run(ana.get_items())] == ["my locker code is 4411", "noted, ana"]


def test_the_session_on_every_engine(engine: str, make_memory: Callable[..., Memory]) -> None:
    """In memory, in a folder, on PostgreSQL and over HTTP the runner keeps the conversation."""
    memory = make_memory()
    ana, bob = (OmnimemSession(memory, session_id="s", user_id=u) for u in ("ana", "bob"))
    run(Agent(name="a", model=ScriptedModel(lambda _: say("ok"))), "ana's note", ana)
    run(Agent(name="b", model=ScriptedModel(lambda _: say("ok"))), "bob's note", bob)
    assert [item_text(i) for i in asyncio.run(ana.get_items())] == ["ana's note", "ok"]
    assert [item_text(i) for i in asyncio.run(bob.get_items())] == ["bob's note", "ok"]


def test_the_agent_calls_search_memory_and_answers_from_it(mem: Memory) -> None:
    mem.add("Ana is allergic to peanuts.", user_id="ana", speaker="ana")
    mem.add("Bob is allergic to shellfish.", user_id="bob", speaker="bob")
    tool = memory_tool(mem, user_id="ana", budget=200)
    assert tool.name == "search_memory" and "query" in json.dumps(tool.params_json_schema)

    def answer(items: list[Any]) -> Any:  # the model repeats what the tool returned
        return say(next(i["output"] for i in items if i.get("type") == "function_call_output"))

    model = ScriptedModel(lambda _: call("search_memory", query="food allergy"), answer)
    agent = Agent(name="assistant", model=model, tools=[tool])
    result = run(agent, "What should I not eat?", OmnimemSession(mem, session_id="s1", user_id="ana"))

    assert "Ana is allergic to peanuts." in result.final_output and "shellfish" not in result.final_output
    stored = asyncio.run(OmnimemSession(mem, session_id="s1", user_id="ana").get_items())
    assert [i.get("type") for i in stored][1:3] == ["function_call", "function_call_output"]


def test_over_a_remote_memory_the_tool_and_the_session_work(tmp_path: Path) -> None:
    with ServedMemory(Memory(tmp_path / "m", embedder="fake"), mcp=False) as remote:
        remote.add("Ana's bike is green.", user_id="ana")
        model = ScriptedModel(lambda _: call("search_memory", query="bike colour"),
                              lambda items: say(items[-1]["output"]))
        agent = Agent(name="assistant", model=model, tools=[memory_tool(remote, user_id="ana")])
        out = asyncio.run(Runner.run(agent, "my bike?", run_config=RunConfig(tracing_disabled=True)))
        assert "Ana's bike is green." in out.final_output
        session = OmnimemSession(remote, session_id="s", user_id="ana")
        run(Agent(name="a", model=ScriptedModel(lambda _: say("ok"))), "remember my bike", session)
        assert [item_text(i) for i in asyncio.run(session.get_items())] == ["remember my bike", "ok"]


def test_bad_input_is_refused_with_typed_errors(mem: Memory) -> None:
    with pytest.raises(InvalidInputError, match="session_id"):
        OmnimemSession(mem, session_id="", user_id="ana")
    with pytest.raises(InvalidInputError, match="user_id"):
        OmnimemSession(mem, session_id="s", user_id=None)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="user_id"):
        memory_tool(mem, user_id=" ")
    session = OmnimemSession(mem, session_id="s", user_id="ana")
    with pytest.raises(InvalidInputError, match="item 1"):
        asyncio.run(session.add_items([{"role": "user", "content": "ok"}, "not an item"]))
    with pytest.raises(InvalidInputError, match="list"):
        asyncio.run(session.add_items({"role": "user", "content": "one"}))  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="limit"):
        asyncio.run(session.get_items(limit=-1))
    with pytest.raises(InvalidInputError, match="JSON"):
        asyncio.run(session.add_items([{"role": "user", "content": "x", "bad": object()}]))
    assert asyncio.run(session.get_items()) == []  # nothing of a refused batch was kept


def test_without_the_extra_the_error_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(sys.modules, "omnimem.integrations.openai_agents", raising=False)
    monkeypatch.setitem(sys.modules, "agents", None)  # as if openai-agents were missing
    with pytest.raises(MissingDependencyError, match=r"pip install 'omnimem\[openai-agents\]'"):
        import omnimem.integrations.openai_agents  # noqa: F401


def test_a_tool_over_every_user_is_an_explicit_choice(mem: Memory) -> None:
    mem.add("Ana is allergic to peanuts.", user_id="ana", speaker="ana")
    mem.add("Bob is allergic to shellfish.", user_id="bob", speaker="bob")
    for unscoped in ({}, {"agent_id": "bot"}, {"session_id": "s1"}):
        with pytest.raises(ConfigError, match="all_users=True"):
            memory_tool(mem, **unscoped)
    with pytest.raises(ConfigError, match="not both"):
        memory_tool(mem, user_id="ana", all_users=True)

    def answer(items: list[Any]) -> Any:
        return say(next(i["output"] for i in items if i.get("type") == "function_call_output"))

    model = ScriptedModel(lambda _: call("search_memory", query="food allergy"), answer)
    agent = Agent(name="assistant", model=model, tools=[memory_tool(mem, all_users=True)])
    result = run(agent, "Who is allergic to what?", OmnimemSession(mem, session_id="s1", user_id="admin"))
    assert "peanuts" in result.final_output and "shellfish" in result.final_output
