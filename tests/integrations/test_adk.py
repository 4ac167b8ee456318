"""Google ADK's own Runner, agents, tools and types over ``OmnimemMemoryService``.

google-adk cannot share the main test environment (it pins opentelemetry-api<=1.44 while fastmcp 4 needs
>=1.45.2), so these tests run in a venv of their own (docs/adk.md, "Tests"); elsewhere they are skipped. The
agent's model is a scripted ``BaseLlm`` (no network) that answers with the ``LlmResponse``s it is given and keeps
every ``LlmRequest`` ADK sent it.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncGenerator, Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("google.adk", reason="google-adk runs in its own venv: see docs/adk.md")

from google.adk.agents import Agent  # noqa: E402
from google.adk.agents.callback_context import CallbackContext  # noqa: E402
from google.adk.events import Event  # noqa: E402
from google.adk.memory import BaseMemoryService  # noqa: E402
from google.adk.memory.memory_entry import MemoryEntry  # noqa: E402
from google.adk.models.base_llm import BaseLlm  # noqa: E402
from google.adk.models.llm_request import LlmRequest  # noqa: E402
from google.adk.models.llm_response import LlmResponse  # noqa: E402
from google.adk.runners import Runner  # noqa: E402
from google.adk.sessions import InMemorySessionService, Session  # noqa: E402
from google.adk.tools import load_memory, preload_memory  # noqa: E402
from google.genai import types  # noqa: E402

from omnimem import Memory  # noqa: E402
from omnimem.errors import ConfigError, InvalidInputError, MissingDependencyError  # noqa: E402
from omnimem.integrations import hit_metadata  # noqa: E402
from omnimem.integrations.adk import OmnimemMemoryService  # noqa: E402
from tests.serving import ServedMemory  # noqa: E402


class ScriptedModel(BaseLlm):
    """A model that replies with ``replies`` in order and keeps each request ADK sent it."""

    model: str = "scripted"
    replies: list[LlmResponse] = []
    requests: list[LlmRequest] = []

    async def generate_content_async(self, llm_request: LlmRequest, stream: bool = False
                                     ) -> AsyncGenerator[LlmResponse, None]:
        self.requests.append(llm_request)
        yield self.replies.pop(0)


def says(text: str) -> LlmResponse:
    return LlmResponse(content=types.Content(role="model", parts=[types.Part(text=text)]))


def calls_load_memory(query: str) -> LlmResponse:
    call = types.FunctionCall(name="load_memory", args={"query": query})
    return LlmResponse(content=types.Content(role="model", parts=[types.Part(function_call=call)]))


def user(text: str) -> types.Content:
    return types.Content(role="user", parts=[types.Part(text=text)])


async def remember_session(callback_context: CallbackContext) -> None:
    """ADK's own way to keep a conversation: the agent's after-callback adds its session to memory."""
    await callback_context.add_session_to_memory()


class App:
    """An ADK Runner of one agent (tools given) over an omnimem memory service; sessions in ADK's memory."""

    def __init__(self, service: OmnimemMemoryService, replies: list[LlmResponse], tools: list[Any],
                 name: str = "travel") -> None:
        self.model = ScriptedModel(replies=replies, requests=[])
        agent = Agent(name="assistant", model=self.model, instruction="Help the user.", tools=tools,
                      after_agent_callback=remember_session)
        self.sessions = InMemorySessionService()
        self.name = name
        self.runner = Runner(app_name=name, agent=agent, session_service=self.sessions, memory_service=service)

    def chat(self, user_id: str, text: str) -> list[Event]:
        async def run() -> list[Event]:
            session = await self.sessions.create_session(app_name=self.name, user_id=user_id)
            return [e async for e in self.runner.run_async(user_id=user_id, session_id=session.id,
                                                         new_message=user(text))]
        return asyncio.run(run())


@pytest.fixture
def mem(tmp_path: Path) -> Iterator[Memory]:
    with Memory(tmp_path / "m", embedder="fake") as m:
        yield m


def preloaded(memory: Memory, first: str, then: str) -> str:
    """What the model of a ``preload_memory`` agent was sent in ana's second session (``then``), after ``first``."""
    app = App(OmnimemMemoryService(memory), [says("Noted."), says("Done.")], tools=[preload_memory])
    app.chat("ana", first)
    app.chat("ana", then)
    return "\n".join(p.text or "" for c in app.model.requests[-1].contents for p in c.parts)


def tool_results(events: list[Event]) -> list[dict[str, Any]]:
    return [p.function_response.response for e in events for p in (e.content.parts if e.content else [])
            if p.function_response is not None and p.function_response.response is not None]


def test_an_agent_recalls_a_past_session_through_load_memory(mem: Memory) -> None:
    service = OmnimemMemoryService(mem)
    assert isinstance(service, BaseMemoryService)
    app = App(service, [says("Noted."), calls_load_memory("allergies"), says("You are allergic to peanuts.")],
              tools=[load_memory])
    app.chat("ana", "I am allergic to peanuts.")
    assert [(u.speaker, u.summary, u.scope.agent_id) for u in mem.units(user_id="ana")] == [
        ("user", "I am allergic to peanuts.", "travel"), ("assistant", "Noted.", "travel")]

    events = app.chat("ana", "What am I allergic to?")
    (found,) = tool_results(events)
    entries = found["result"].memories
    assert [(m.author, m.content.parts[0].text) for m in entries][0] == ("user", "I am allergic to peanuts.")
    assert events[-1].content.parts[0].text == "You are allergic to peanuts."
    # the model saw the memory as load_memory's result, in its next request
    shown = str(app.model.requests[-1].contents[-1].parts[0].function_response.response)
    assert "I am allergic to peanuts." in shown


def test_preload_memory_puts_past_conversations_in_the_request(mem: Memory) -> None:
    prompt = preloaded(mem, "I always want a window seat on long flights.", "Book my flight to Tokyo, a seat as usual.")
    assert "<PAST_CONVERSATIONS>" in prompt
    assert "user: I always want a window seat on long flights." in prompt
    stamp = mem.units(user_id="ana")[0].event_time
    assert stamp is not None and f"Time: {stamp.isoformat()}" in prompt


def test_a_session_added_again_or_grown_stores_each_event_once(mem: Memory) -> None:
    service = OmnimemMemoryService(mem)
    app = App(service, [says("Noted."), says("Sure.")], tools=[])

    async def two_turns() -> Session:
        session = await app.sessions.create_session(app_name="travel", user_id="ana")
        for text in ("My passport expires in May.", "Remind me in April."):
            async for _ in app.runner.run_async(user_id="ana", session_id=session.id, new_message=user(text)):
                pass  # the after-callback adds the session each turn: the first turn's events twice
        grown = await app.sessions.get_session(app_name="travel", user_id="ana", session_id=session.id)
        assert grown is not None
        await service.add_session_to_memory(grown)  # and once more by hand
        return grown

    session = asyncio.run(two_turns())
    units = mem.units(user_id="ana", session_id=session.id)
    assert [u.summary for u in units] == ["My passport expires in May.", "Noted.", "Remind me in April.", "Sure."]
    assert [u.source_ids for u in units] == [(e.id,) for e in session.events]


def test_tool_calls_and_results_are_left_out_of_memory(mem: Memory) -> None:
    service = OmnimemMemoryService(mem)
    mem.add("I live in Lisbon.", user_id="ana", agent_id="travel", speaker="user")
    app = App(service, [calls_load_memory("home"), says("You live in Lisbon.")], tools=[load_memory])
    app.chat("ana", "Where do I live?")
    assert [u.summary for u in mem.units(user_id="ana")] == [
        "I live in Lisbon.", "Where do I live?", "You live in Lisbon."]


def test_entries_keep_what_the_hits_metadata_says(mem: Memory) -> None:
    service = OmnimemMemoryService(mem, top_k=2)
    mem.add_dialogue([{"id": "e1", "speaker": "user", "text": "I moved to Lisbon in March.",
                       "time": "2024-03-02T10:00:00+00:00"}], user_id="ana", agent_id="travel", session_id="s1")
    response = asyncio.run(service.search_memory(app_name="travel", user_id="ana", query="Lisbon"))
    (entry,) = response.memories
    (hit,) = mem.search("Lisbon", top_k=2, user_id="ana", agent_id="travel").hits
    assert isinstance(entry, MemoryEntry)
    assert entry.custom_metadata == {**hit_metadata(hit), "session_id": "s1", "metadata": {}}
    assert (entry.id, entry.author, entry.timestamp) == (hit.unit.id, "user", "2024-03-02T10:00:00+00:00")
    assert entry.content.role == "user" and entry.content.parts[0].text == "I moved to Lisbon in March."


def test_each_user_and_app_reads_its_own_memory_and_all_users_is_explicit(mem: Memory) -> None:
    service = OmnimemMemoryService(mem)

    async def remember() -> None:
        for user_id, app_name, text in (("ana", "travel", "Ana rides the tram."), ("bob", "travel", "Bob rides "
                                        "the ferry."), ("ana", "cooking", "Ana rides a bike to the market.")):
            session = Session(id="s", app_name=app_name, user_id=user_id,
                              events=[Event(author="user", content=user(text))])
            await service.add_session_to_memory(session)

    def found(svc: OmnimemMemoryService, user_id: str, app_name: str = "travel") -> list[str]:
        got = asyncio.run(svc.search_memory(app_name=app_name, user_id=user_id, query="who rides what"))
        return sorted(m.content.parts[0].text or "" for m in got.memories)

    asyncio.run(remember())
    assert found(service, "ana") == ["Ana rides the tram."]
    assert found(service, "bob") == ["Bob rides the ferry."]
    assert found(service, "ana", "cooking") == ["Ana rides a bike to the market."]
    assert found(service, "zoe") == []
    shared = OmnimemMemoryService(mem, all_users=True)
    assert found(shared, "zoe") == ["Ana rides the tram.", "Bob rides the ferry."]


def test_add_events_add_memory_and_delete_memory(mem: Memory) -> None:
    service = OmnimemMemoryService(mem)
    events = [Event(author="user", content=user("My gate is B12.")), Event(author="assistant", content=None)]

    async def run() -> list[MemoryEntry]:
        await service.add_events_to_memory(app_name="travel", user_id="ana", events=events, session_id="s1",
                                           custom_metadata={"ttl_days": 7})
        await service.add_events_to_memory(app_name="travel", user_id="ana", events=events, session_id="s1")
        await service.add_memory(app_name="travel", user_id="ana", memories=[MemoryEntry(
            content=types.Content(parts=[types.Part(text="Ana collects stamps.")]), author="user",
            timestamp="2024-01-05T09:00:00+00:00")])
        return (await service.search_memory(app_name="travel", user_id="ana", query="gate B12")).memories

    entries = asyncio.run(run())
    gate = next(m for m in entries if m.content.parts[0].text == "My gate is B12.")
    assert gate.custom_metadata["metadata"] == {"ttl_days": 7} and gate.custom_metadata["session_id"] == "s1"
    assert [u.summary for u in mem.units(user_id="ana")] == ["Ana collects stamps.", "My gate is B12."]
    asyncio.run(service.delete_memory(app_name="travel", user_id="ana", memory_id=gate.id))
    asyncio.run(service.delete_memory(app_name="travel", user_id="ana", memory_id=None))  # removes nothing
    assert [u.summary for u in mem.units(user_id="ana")] == ["Ana collects stamps."]


def test_over_a_remote_memory(tmp_path: Path) -> None:
    with ServedMemory(Memory(tmp_path / "m", embedder="fake"), mcp=False) as remote:
        assert "user: I am allergic to peanuts." in preloaded(remote, "I am allergic to peanuts.",
                                                              "Order me a snack without peanuts.")
        service = OmnimemMemoryService(remote)
        assert [u.speaker for u in remote.units(user_id="ana", agent_id="travel")][:2] == ["user", "assistant"]
        long_paste = "log line ok " * 5000 + "peanuts"
        entries = asyncio.run(service.search_memory(app_name="travel", user_id="ana", query=long_paste))
        assert entries.memories  # clipped to the server's query limit, not refused


def test_bad_input_is_refused_with_typed_errors(mem: Memory) -> None:
    service = OmnimemMemoryService(mem)
    with pytest.raises(InvalidInputError, match="Session"):
        asyncio.run(service.add_session_to_memory("not a session"))  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="list of ADK Events"):
        asyncio.run(service.add_events_to_memory(app_name="a", user_id="ana",
                                                 events=Event(author="user")))  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="no text"):
        asyncio.run(service.add_memory(app_name="a", user_id="ana", memories=[MemoryEntry(
            content=types.Content(parts=[]))]))
    with pytest.raises(ConfigError, match="user_id"):
        asyncio.run(service.search_memory(app_name="a", user_id=" ", query="x"))
    with pytest.raises(InvalidInputError, match="query"):
        asyncio.run(service.search_memory(app_name="a", user_id="ana", query="   "))
    with pytest.raises(InvalidInputError, match="agent_id"):
        asyncio.run(service.search_memory(app_name="", user_id="ana", query="x"))
    with pytest.raises(InvalidInputError, match="top_k"):
        asyncio.run(OmnimemMemoryService(mem, top_k=-1).search_memory(app_name="a", user_id="ana", query="x"))
    with pytest.raises(InvalidInputError, match="all_users"):
        OmnimemMemoryService(mem, all_users="yes")  # type: ignore[arg-type]


def test_without_the_extra_the_error_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(sys.modules, "omnimem.integrations.adk", raising=False)
    monkeypatch.setitem(sys.modules, "google.adk.memory", None)  # as if google-adk were missing
    with pytest.raises(MissingDependencyError, match=r"pip install 'omnimem\[adk\]'"):
        import omnimem.integrations.adk  # noqa: F401
