"""AutoGen's own ``AssistantAgent`` and model context over ``OmnimemMemory``.

autogen-core cannot share the main test environment (it pins protobuf~=5.29; the test set has protobuf 7), so
these tests run in a venv of their own (docs/autogen.md, "Tests"); elsewhere they are skipped. The agent's
model is autogen-ext's ``ReplayChatCompletionClient`` (no network), which keeps every call it got.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("autogen_core", reason="autogen runs in its own venv: see docs/autogen.md")

from autogen_agentchat.agents import AssistantAgent  # noqa: E402
from autogen_agentchat.messages import MemoryQueryEvent  # noqa: E402
from autogen_core.memory import Memory as AutogenMemory  # noqa: E402
from autogen_core.memory import MemoryContent, MemoryMimeType  # noqa: E402
from autogen_core.model_context import BufferedChatCompletionContext  # noqa: E402
from autogen_core.models import SystemMessage, UserMessage  # noqa: E402
from autogen_ext.models.replay import ReplayChatCompletionClient  # noqa: E402

from omnimem import Memory  # noqa: E402
from omnimem.errors import ConfigError, InvalidInputError, MissingDependencyError  # noqa: E402
from omnimem.integrations import hit_metadata  # noqa: E402
from omnimem.integrations.autogen import OmnimemMemory  # noqa: E402
from tests.serving import ServedMemory  # noqa: E402


@pytest.fixture
def mem(tmp_path: Path) -> Iterator[Memory]:
    with Memory(tmp_path / "m", embedder="fake") as m:
        yield m


def text(content: str, **metadata: object) -> MemoryContent:
    return MemoryContent(content=content, mime_type=MemoryMimeType.TEXT, metadata=metadata or None)


def ask(memory: OmnimemMemory, task: str, reply: str = "Noted.") -> tuple[list[object], list[str]]:
    """Run an AssistantAgent with the memory on one task: its messages, and the system messages the model got."""
    client = ReplayChatCompletionClient([reply])
    agent = AssistantAgent("assistant", model_client=client, memory=[memory])
    result = asyncio.run(agent.run(task=task))
    (call,) = client.create_calls
    return list(result.messages), [m.content for m in call["messages"] if isinstance(m, SystemMessage)]


def test_an_assistant_agent_answers_with_the_users_memories(mem: Memory) -> None:
    ana = OmnimemMemory(mem, user_id="ana")
    assert isinstance(ana, AutogenMemory)
    asyncio.run(ana.add(text("Ana is allergic to peanuts.")))
    asyncio.run(OmnimemMemory(mem, user_id="bob").add(text("Bob is allergic to cats.")))
    messages, system = ask(ana, "What am I allergic to?", reply="Peanuts.")
    memory_event = next(m for m in messages if isinstance(m, MemoryQueryEvent))
    assert [c.content for c in memory_event.content] == ["Ana is allergic to peanuts."]
    (context,) = [s for s in system if s.startswith("Relevant memory content:\n")]
    assert context == "Relevant memory content:\n" + mem.search("What am I allergic to?", user_id="ana").render()
    assert "cats" not in context  # bob's memory stays bob's
    assert getattr(messages[-1], "content") == "Peanuts."


def test_nothing_found_adds_nothing_to_the_models_context(mem: Memory) -> None:
    messages, system = ask(OmnimemMemory(mem, user_id="zoe"), "Hello there")
    assert not any(isinstance(m, MemoryQueryEvent) for m in messages)
    assert not any(s.startswith("Relevant memory content") for s in system)


def test_query_results_keep_what_the_hits_metadata_says(mem: Memory) -> None:
    memory = OmnimemMemory(mem, user_id="ana", top_k=1)
    asyncio.run(memory.add(text("Ana moved to Lisbon in March.", source="chat", time="kept")))
    (found,) = asyncio.run(memory.query("Lisbon")).results
    (hit,) = mem.search("Lisbon", top_k=1, user_id="ana").hits
    assert found.content == "Ana moved to Lisbon in March." and found.mime_type == MemoryMimeType.TEXT
    assert found.metadata == {"source": "chat", **hit_metadata(hit), "id": hit.unit.id}  # the hit's "time" wins


def test_json_and_markdown_round_trip_and_other_content_is_refused(mem: Memory) -> None:
    memory = OmnimemMemory(mem, user_id="ana")
    asyncio.run(memory.add(MemoryContent(content={"diet": "vegetarian", "since": 2019},
                                         mime_type=MemoryMimeType.JSON)))
    asyncio.run(memory.add(MemoryContent(content="# Trips\n- Tokyo in May", mime_type="text/markdown")))
    by_type = {c.mime_type: c.content for c in asyncio.run(memory.query("diet vegetarian trips Tokyo")).results}
    assert by_type[MemoryMimeType.JSON] == {"diet": "vegetarian", "since": 2019}
    assert by_type[MemoryMimeType.MARKDOWN] == "# Trips\n- Tokyo in May"
    assert asyncio.run(memory.query(MemoryContent(content={"diet": "vegetarian"}, mime_type="application/json")))
    with pytest.raises(InvalidInputError, match="add_image"):
        asyncio.run(memory.add(MemoryContent(content=b"\x89PNG", mime_type=MemoryMimeType.BINARY)))
    with pytest.raises(InvalidInputError, match="must be a dict"):
        asyncio.run(memory.add(MemoryContent(content="not json", mime_type=MemoryMimeType.JSON)))


def test_update_context_searches_the_latest_message_with_text(mem: Memory) -> None:
    memory = OmnimemMemory(mem, user_id="ana", agent_id="planner", session_id="trip")
    asyncio.run(memory.add(text("The hotel in Tokyo is booked for May 3.")))
    asyncio.run(memory.add(text("Ana wants brief answers.")))
    context = BufferedChatCompletionContext(buffer_size=10)

    async def run() -> list[str]:
        await context.add_message(UserMessage(content="When is my hotel in Tokyo?", source="user"))
        await context.add_message(SystemMessage(content="Be brief."))  # left out of the query
        result = await memory.update_context(context)
        assert result.memories.results[0].content == "The hotel in Tokyo is booked for May 3."
        return [str(m.content) for m in await context.get_messages()]

    assert asyncio.run(run())[-1] == "Relevant memory content:\n" + mem.search(
        "When is my hotel in Tokyo?", user_id="ana", agent_id="planner", session_id="trip").render()
    assert [u.scope.as_dict() for u in mem.units(user_id="ana")] == [
        {"user_id": "ana", "agent_id": "planner", "session_id": "trip"}] * 2


def test_clear_forgets_this_scope_only_and_close_leaves_the_memory_open(mem: Memory) -> None:
    ana, bob = OmnimemMemory(mem, user_id="ana"), OmnimemMemory(mem, user_id="bob")
    asyncio.run(ana.add(text("Ana likes tea.")))
    asyncio.run(bob.add(text("Bob likes coffee.")))
    asyncio.run(ana.clear())
    assert mem.units(user_id="ana") == [] and [u.summary for u in mem.units(user_id="bob")] == ["Bob likes coffee."]
    assert asyncio.run(ana.query("tea")).results == []
    asyncio.run(bob.close())
    assert [c.content for c in asyncio.run(bob.query("coffee")).results] == ["Bob likes coffee."]


def test_searching_every_user_is_an_explicit_choice_and_read_only(mem: Memory) -> None:
    asyncio.run(OmnimemMemory(mem, user_id="ana").add(text("Ana rides the tram.")))
    asyncio.run(OmnimemMemory(mem, user_id="bob").add(text("Bob rides the ferry.")))
    for unscoped in ({}, {"agent_id": "bot"}, {"session_id": "s1"}):
        with pytest.raises(ConfigError, match="all_users=True"):
            OmnimemMemory(mem, **unscoped)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="not both"):
        OmnimemMemory(mem, user_id="ana", all_users=True)
    every = OmnimemMemory(mem, all_users=True)
    assert sorted(c.content for c in asyncio.run(every.query("who rides what")).results) == [
        "Ana rides the tram.", "Bob rides the ferry."]
    with pytest.raises(ConfigError, match="cannot add"):
        asyncio.run(every.add(text("Zoe rides a bike.")))
    with pytest.raises(ConfigError, match="cannot clear"):
        asyncio.run(every.clear())
    assert mem.count_units() == 2


def test_over_a_remote_memory(tmp_path: Path) -> None:
    with ServedMemory(Memory(tmp_path / "m", embedder="fake"), mcp=False) as remote:
        memory = OmnimemMemory(remote, user_id="ana")
        asyncio.run(memory.add(MemoryContent(content={"seat": "window"}, mime_type=MemoryMimeType.JSON,
                                             metadata={"topic": "flights"})))
        messages, system = ask(memory, "Which seat do I like on flights?")
        (event,) = [m for m in messages if isinstance(m, MemoryQueryEvent)]
        assert event.content[0].content == {"seat": "window"} and event.content[0].metadata["topic"] == "flights"
        assert any(s.startswith("Relevant memory content:\n") and '"seat": "window"' in s for s in system)
        assert asyncio.run(memory.query("log line ok " * 5000 + "seat")).results  # clipped to the server's limit
        asyncio.run(memory.clear())
        assert remote.units(user_id="ana") == []


def test_bad_input_is_refused_with_typed_errors(mem: Memory) -> None:
    memory = OmnimemMemory(mem, user_id="ana")
    with pytest.raises(InvalidInputError, match="MemoryContent"):
        asyncio.run(memory.add("just a string"))  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="query"):
        asyncio.run(memory.query("   "))
    with pytest.raises(InvalidInputError, match="unknown query argument"):
        asyncio.run(memory.query("tea", k=3))
    with pytest.raises(InvalidInputError, match="top_k"):
        asyncio.run(memory.query("tea", top_k=-1))
    with pytest.raises(InvalidInputError, match="user_id"):
        asyncio.run(OmnimemMemory(mem, user_id=" ").add(text("x")))
    with pytest.raises(InvalidInputError, match="metadata"):
        asyncio.run(memory.add(text("x", when=object())))


def test_without_the_extra_the_error_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(sys.modules, "omnimem.integrations.autogen", raising=False)
    monkeypatch.setitem(sys.modules, "autogen_core.memory", None)  # as if autogen-core were missing
    with pytest.raises(MissingDependencyError, match=r"pip install 'omnimem\[autogen\]'"):
        import omnimem.integrations.autogen  # noqa: F401
