"""OmnimemRetriever through langchain-core's own retriever interface and an LCEL chain (no LLM)."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.documents import Document
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnableLambda, RunnablePassthrough

from omnimem import Memory
from omnimem.errors import ConfigError, InvalidInputError, MissingDependencyError
from omnimem.integrations.langchain import OmnimemRetriever
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
        m.add("Ben's sister lives in Porto.", user_id="ben", speaker="ben")
        yield m


def test_invoke_returns_documents_of_the_pyramid_hits(mem: Memory) -> None:
    retriever = OmnimemRetriever(memory=mem, user_id="ana", budget=400)
    assert isinstance(retriever, BaseRetriever)
    docs = retriever.invoke("where did ana move")
    ctx = mem.search("where did ana move", user_id="ana", budget=400)
    assert all(isinstance(d, Document) for d in docs)
    assert [d.page_content for d in docs] == [h.text for h in ctx.hits] and len(docs) == 3
    first, hit = docs[0].metadata, ctx.hits[0]
    assert first["id"] == hit.unit.id == docs[0].id and first["speaker"] == hit.unit.speaker
    assert hit.unit.event_time is not None and first["time"] == hit.unit.event_time.isoformat()
    assert first["score"] == pytest.approx(hit.score) and first["sources"] == sorted(hit.sources)
    assert first["source_ids"] == list(hit.unit.source_ids) and first["rank"] == 1
    assert sum(d.metadata["tokens"] for d in docs) <= 400


def test_the_scope_is_the_retrievers(mem: Memory) -> None:
    ben = OmnimemRetriever(memory=mem, user_id="ben").invoke("Lisbon tram Porto")
    assert [d.page_content for d in ben] == ["ben: Ben's sister lives in Porto."]
    assert all("Porto" not in d.page_content for d in OmnimemRetriever(memory=mem, user_id="ana").invoke("Porto"))


def test_searching_every_user_is_an_explicit_choice(mem: Memory) -> None:
    unscoped_retrievers: list[dict[str, Any]] = [{}, {"agent_id": "bot"}, {"session_id": "s1"}]
    for unscoped in unscoped_retrievers:
        with pytest.raises(ConfigError, match="all_users=True"):
            OmnimemRetriever(memory=mem, **unscoped)
    with pytest.raises(ConfigError, match="not both"):
        OmnimemRetriever(memory=mem, user_id="ana", all_users=True)
    every = OmnimemRetriever(memory=mem, all_users=True, budget=1000).invoke("Lisbon tram Porto sister")
    assert {d.metadata["speaker"] for d in every} == {"ana", "ben"}


def test_k_bounds_the_documents_per_retriever_and_per_call(mem: Memory) -> None:
    retriever = OmnimemRetriever(memory=mem, user_id="ana", budget=1000)
    assert len(retriever.invoke("tram Lisbon")) == 3
    assert len(retriever.invoke("tram Lisbon", k=1)) == 1 and len(retriever.invoke("tram Lisbon", top_k=2)) == 2
    assert len(OmnimemRetriever(memory=mem, user_id="ana", k=2).invoke("tram Lisbon")) == 2
    assert len(OmnimemRetriever(memory=mem, user_id="ana", top_k=2).invoke("tram Lisbon")) == 2  # the other name
    assert len(OmnimemRetriever(memory=mem, user_id="ana", k=2).invoke("tram Lisbon", k=1)) == 1  # the call wins
    assert [d.id for d in asyncio.run(retriever.ainvoke("tram Lisbon", k=1))] == \
        [d.id for d in retriever.invoke("tram Lisbon", k=1)]
    with pytest.raises(ConfigError, match="disagree"):
        OmnimemRetriever(memory=mem, user_id="ana", k=2, top_k=3)
    with pytest.raises(InvalidInputError, match="disagree"):
        retriever.invoke("tram", k=1, top_k=2)
    with pytest.raises(InvalidInputError, match="unknown retriever argument"):
        retriever.invoke("tram", kk=1)
    with pytest.raises(InvalidInputError, match="top_k"):
        retriever.invoke("tram", k=0)


def test_a_small_budget_gives_fewer_documents(mem: Memory) -> None:
    small = OmnimemRetriever(memory=mem, user_id="ana", budget=40).invoke("tram")
    large = OmnimemRetriever(memory=mem, user_id="ana", budget=1000).invoke("tram")
    assert 0 < len(small) < len(large)


def test_async_and_batch(mem: Memory) -> None:
    retriever = OmnimemRetriever(memory=mem, user_id="ana")
    docs = asyncio.run(retriever.ainvoke("tram"))
    assert [d.id for d in docs] == [d.id for d in retriever.invoke("tram")]
    batched = retriever.batch(["tram", "Lisbon"])
    assert [[d.id for d in b] for b in batched] == [[d.id for d in retriever.invoke(q)] for q in ("tram", "Lisbon")]


def test_in_an_lcel_chain(mem: Memory) -> None:
    retriever = OmnimemRetriever(memory=mem, user_id="ana", budget=300)
    prompt = ChatPromptTemplate.from_messages([("system", "Answer from these memories:\n{memories}"),
                                               ("human", "{question}")])
    chain = (
        {"memories": retriever | RunnableLambda(lambda docs: "\n".join(d.page_content for d in docs)),
         "question": RunnablePassthrough()}
        | prompt
        | RunnableLambda(lambda value: value.to_messages())
    )
    messages = chain.invoke("where did ana move")
    assert messages[1].content == "where did ana move"
    assert "ana: I moved to Lisbon in March." in messages[0].content


def test_over_a_remote_memory(tmp_path: Path) -> None:
    with ServedMemory(Memory(tmp_path / "m", embedder="fake"), mcp=False) as remote:
        remote.add_dialogue(TURNS, user_id="ana")
        docs = OmnimemRetriever(memory=remote, user_id="ana").invoke("tram")
        assert docs and docs[0].metadata["speaker"] == "ana" and "tram" in docs[0].page_content


def test_without_the_extra_the_error_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(sys.modules, "omnimem.integrations.langchain")
    monkeypatch.setitem(sys.modules, "langchain_core.retrievers", None)  # as if langchain-core were missing
    with pytest.raises(MissingDependencyError, match=r"pip install 'omnimem\[langchain\]'"):
        import omnimem.integrations.langchain  # noqa: F401
