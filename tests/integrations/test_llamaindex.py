"""LlamaIndex's own chat engines read omnimem through ``OmnimemRetriever`` and ``OmnimemMemoryBlock``.

The LLM is LlamaIndex's ``MockLLMWithChatMemoryOfLastCall`` (no network): it keeps the messages of
its last call, so the tests see what the engine handed the model.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.chat_engine import ContextChatEngine, SimpleChatEngine
from llama_index.core.llms import MockLLM
from llama_index.core.llms.mock import MockLLMWithChatMemoryOfLastCall
from llama_index.core.memory import Memory as ChatMemory
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.schema import NodeWithScore

from omnimem import Memory
from omnimem.errors import ConfigError, InvalidInputError, MissingDependencyError
from omnimem.integrations.llamaindex import OmnimemMemoryBlock, OmnimemRetriever
from tests.serving import ServedMemory

TURNS = [
    {"id": "c1:1", "speaker": "ana", "text": "I moved to Lisbon in March.", "time": "2024-03-02T10:00"},
    {"id": "c1:2", "speaker": "ben", "text": "How do you like the trams there?", "time": "2024-03-02T10:01"},
    {"id": "c1:3", "speaker": "ana", "text": "The yellow tram up the hill is lovely.", "time": "2024-03-02T10:02"},
]


@pytest.fixture
def mem(tmp_path: Path) -> Iterator[Memory]:
    with Memory(tmp_path / "m", embedder="fake") as m:
        m.add_dialogue(TURNS, user_id="ana")
        m.add("Bob moved to Porto last year.", user_id="bob", speaker="bob")
        yield m


def llm_saw(llm: MockLLMWithChatMemoryOfLastCall) -> str:
    return "\n".join(str(m.content) for m in llm.last_chat_messages or ())


def test_retrieve_returns_scored_nodes_of_the_pyramid_hits(mem: Memory) -> None:
    retriever = OmnimemRetriever(mem, user_id="ana", similarity_top_k=2)
    assert isinstance(retriever, BaseRetriever)
    nodes = retriever.retrieve("where did ana move")
    assert nodes and all(isinstance(n, NodeWithScore) for n in nodes) and len(nodes) <= 2
    best = nodes[0]
    assert best.node.get_content() == "ana: I moved to Lisbon in March." and best.score is not None
    assert best.node.metadata["time"] == "2024-03-02T10:00:00+00:00" and best.node.metadata["source_ids"] == ["c1:1"]
    assert best.node.node_id == mem.get(best.node.node_id).id
    assert [n.node.get_content() for n in asyncio.run(retriever.aretrieve("where did ana move"))] == \
        [n.node.get_content() for n in nodes]


def test_a_context_chat_engine_answers_from_the_users_memories_only(mem: Memory) -> None:
    # MockLLM answers with the prompt it was given: the answer shows what the engine put in front of the model
    engine = ContextChatEngine.from_defaults(retriever=OmnimemRetriever(mem, user_id="ana"), llm=MockLLM())
    answer = engine.chat("where did I move?")
    assert "ana: I moved to Lisbon in March." in answer.response and "Porto" not in answer.response
    assert answer.source_nodes[0].node.get_content() == "ana: I moved to Lisbon in March."

    bob = ContextChatEngine.from_defaults(retriever=OmnimemRetriever(mem, user_id="bob"), llm=MockLLM())
    answer = bob.chat("where did I move?")
    assert "Porto" in answer.response and "Lisbon" not in answer.response


def test_a_query_engine_over_the_retriever(mem: Memory) -> None:
    engine = RetrieverQueryEngine.from_args(OmnimemRetriever(mem, user_id="ana"), llm=MockLLM())
    response = engine.query("which tram is lovely")
    assert any("yellow tram" in n.node.get_content() for n in response.source_nodes)


def chat_memory(mem: Memory, user: str, session: str) -> ChatMemory:
    """A LlamaIndex Memory with a short queue, so older turns flush into omnimem."""
    block = OmnimemMemoryBlock(memory=mem, user_id=user)
    return ChatMemory.from_defaults(session_id=session, token_limit=60, chat_history_token_ratio=0.5,
                                    token_flush_size=20, memory_blocks=[block])


def test_the_memory_block_keeps_what_the_chat_flushes_and_brings_it_back(tmp_path: Path) -> None:
    with Memory(tmp_path / "m", embedder="fake") as mem:
        llm = MockLLMWithChatMemoryOfLastCall(max_tokens=4)
        chat = SimpleChatEngine.from_defaults(llm=llm, memory=chat_memory(mem, "ana", "monday"))
        for line in ["my dog is called Rex and he is a beagle", "I also drink green tea every morning",
                     "the weather is nice today in the park"]:
            chat.chat(line)
        stored = mem.units(user_id="ana")
        assert ("user", "my dog is called Rex and he is a beagle", "monday") in \
            [(u.speaker, u.summary, u.scope.session_id) for u in stored]

        # another session of the same user: the block recalls the first one's flushed turns
        later = MockLLMWithChatMemoryOfLastCall(max_tokens=4)
        SimpleChatEngine.from_defaults(llm=later, memory=chat_memory(mem, "ana", "tuesday")).chat(
            "what is my dog called?")
        assert "user: my dog is called Rex and he is a beagle" in llm_saw(later)

        # a second user with the same session id sees nothing of ana's
        bob = MockLLMWithChatMemoryOfLastCall(max_tokens=4)
        SimpleChatEngine.from_defaults(llm=bob, memory=chat_memory(mem, "bob", "monday")).chat(
            "what is my dog called?")
        assert "Rex" not in llm_saw(bob) and "green tea" not in llm_saw(bob)
        assert mem.units(user_id="bob") == []


def test_block_get_and_put_directly_through_llamaindex_memory(mem: Memory) -> None:
    chat = ChatMemory.from_defaults(session_id="s", token_limit=10_000,
                                    memory_blocks=[OmnimemMemoryBlock(memory=mem, user_id="ana", budget=100)])
    messages = asyncio.run(chat.aget("where did I move"))
    assert "ana: I moved to Lisbon in March." in str(messages[0].content)
    nothing = ChatMemory.from_defaults(session_id="s2", memory_blocks=[OmnimemMemoryBlock(memory=mem,
                                                                                          user_id="carol")])
    assert asyncio.run(nothing.aget("where did I move")) == []  # nothing found: no block in the prompt


def test_over_a_remote_memory(tmp_path: Path) -> None:
    with ServedMemory(Memory(tmp_path / "m", embedder="fake"), mcp=False) as remote:
        remote.add_dialogue(TURNS, user_id="ana")
        nodes = OmnimemRetriever(remote, user_id="ana").retrieve("tram")
        assert nodes and "tram" in nodes[0].node.get_content()
        block = OmnimemMemoryBlock(memory=remote, user_id="zoe")
        asyncio.run(block.aput([_message("user", "my bike is green")], session_id="s1"))
        assert "my bike is green" in asyncio.run(block.aget([_message("user", "what colour is my bike")]))
        long_paste = [_message("user", "log line ok " * 5000), _message("user", "what colour is my bike")]
        assert "my bike is green" in asyncio.run(block.aget(long_paste))  # clipped to the server's limit
        assert [u.scope.session_id for u in remote.units(user_id="zoe")] == ["s1"]


def _message(role: str, text: str) -> ChatMessage:
    return ChatMessage(role=role, content=text)


def test_the_block_and_retriever_on_every_engine(make_memory: Callable[..., Memory]) -> None:
    """In memory, in a folder, on PostgreSQL and over HTTP: two users' blocks keep to their own memories."""
    memory = make_memory()
    ana, bob = (OmnimemMemoryBlock(memory=memory, user_id=u) for u in ("ana", "bob"))
    asyncio.run(ana.aput([_message("user", "my bike is green")], session_id="s1"))
    asyncio.run(bob.aput([_message("user", "my car is red")], session_id="s1"))
    assert "my bike is green" in asyncio.run(ana.aget([_message("user", "what colour is my bike")]))
    assert "bike" not in asyncio.run(bob.aget([_message("user", "what colour is my bike")]))
    assert [n.node.get_content() for n in OmnimemRetriever(memory, user_id="bob").retrieve("car")] == \
        ["user: my car is red"]


def test_bad_input_is_refused_with_typed_errors(mem: Memory) -> None:
    with pytest.raises(InvalidInputError, match="user_id"):
        OmnimemRetriever(mem, user_id=" ")
    with pytest.raises(InvalidInputError, match="top_k"):
        OmnimemRetriever(mem, user_id="ana", similarity_top_k=-1).retrieve("x")
    with pytest.raises(InvalidInputError, match="user_id"):
        OmnimemMemoryBlock(memory=mem, user_id=None)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="agent_id"):
        OmnimemMemoryBlock(memory=mem, user_id="ana", agent_id="")
    with pytest.raises(InvalidInputError, match="retrieval_context_window"):
        OmnimemMemoryBlock(memory=mem, user_id="ana", retrieval_context_window=0)


def test_without_the_extra_the_error_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(sys.modules, "omnimem.integrations.llamaindex", raising=False)
    monkeypatch.setitem(sys.modules, "llama_index.core.memory.memory", None)  # as if llama-index-core were missing
    with pytest.raises(MissingDependencyError, match=r"pip install 'omnimem\[llamaindex\]'"):
        import omnimem.integrations.llamaindex  # noqa: F401


def test_searching_every_user_is_an_explicit_choice(mem: Memory) -> None:
    mem.add("Ana rides the tram.", user_id="ana", speaker="ana")
    mem.add("Bob rides the ferry.", user_id="bob", speaker="bob")
    for unscoped in ({}, {"agent_id": "bot"}, {"session_id": "s1"}):
        with pytest.raises(ConfigError, match="all_users=True"):
            OmnimemRetriever(mem, **unscoped)
    with pytest.raises(ConfigError, match="not both"):
        OmnimemRetriever(mem, user_id="ana", all_users=True)
    every = OmnimemRetriever(mem, all_users=True).retrieve("who rides what")
    assert {"ana", "bob"} <= {n.node.metadata["speaker"] for n in every}  # the fixture's users too


def test_a_long_paste_clips_the_blocks_query_and_every_later_turn_still_recalls(tmp_path: Path) -> None:
    """A 50,000-character paste is more than a search takes (max_query_chars, 20,000): the block searches the
    newest 20,000 characters of its window, so the paste's turn and the turns after it all answer."""
    paste = " ".join(f"line {n}: 2024-03-0{n % 9 + 1} INFO worker heartbeat ok" for n in range(1200))[:50_000]
    assert len(paste) == 50_000
    with Memory(tmp_path / "m", embedder="fake") as mem:
        mem.add("my dog is called Rex and he is a beagle", user_id="ana", speaker="user")
        llm = MockLLMWithChatMemoryOfLastCall(max_tokens=4)
        chat = SimpleChatEngine.from_defaults(llm=llm, memory=ChatMemory.from_defaults(
            session_id="s", token_limit=100_000, memory_blocks=[OmnimemMemoryBlock(memory=mem, user_id="ana")]))

        chat.chat(f"here is my log, please look at it:\n{paste}")
        for question in ["what is my dog called?", "which breed is my dog?"]:
            chat.chat(question)  # the paste is still among the block's last five messages
            assert "user: my dog is called Rex and he is a beagle" in llm_saw(llm)

        block = OmnimemMemoryBlock(memory=mem, user_id="ana")
        query = block.query([_message("user", paste), _message("assistant", "ok"),
                             _message("user", "what is my dog called?")])
        assert block.query([_message("user", "short"), _message("user", "question")]) == "short question"
    assert len(query) <= 20_000 and query.endswith(f"{paste[-60:]} ok what is my dog called?")  # the newest text
    assert query.split(" ", 1)[0] in paste.split()  # it starts on a whole word
