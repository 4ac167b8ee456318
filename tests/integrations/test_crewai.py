"""CrewAI's own ``Memory`` (its encoding and recall flows) over ``OmnimemStorage``.

crewai cannot share the main test environment (it pins pydantic<2.13, mcp<2, openai<3 and httpx<0.29), so
these tests run in a venv of their own (docs/crewai.md, "Tests"); elsewhere they are skipped. A CrewAI
``Agent`` runs with a scripted LLM (no network); direct ``Memory`` calls give each memory's scope, categories
and importance and recall with ``depth="shallow"``, so CrewAI calls no LLM there; ``omnimem_embedder`` embeds
offline.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

crewai = pytest.importorskip("crewai", reason="crewai runs in its own venv: see docs/crewai.md")

from crewai import Agent  # noqa: E402
from crewai.llms.base_llm import BaseLLM  # noqa: E402
from crewai.memory.analyze import (ConsolidationPlan, ExtractedMemories, ExtractedMetadata,  # noqa: E402
                                   MemoryAnalysis)
from crewai.memory.storage.backend import StorageBackend  # noqa: E402
from crewai.memory.types import MemoryRecord  # noqa: E402

from omnimem import Memory  # noqa: E402
from omnimem.errors import ConfigError, InvalidInputError, MissingDependencyError  # noqa: E402
from omnimem.integrations.crewai import OmnimemStorage, omnimem_embedder  # noqa: E402


@pytest.fixture
def mem(tmp_path: Path) -> Iterator[Memory]:
    with Memory(tmp_path / "m", embedder="fake") as m:
        yield m


def crew_memory(mem: Memory, user: str, agent: str | None = None) -> Any:
    return crewai.Memory(storage=OmnimemStorage(mem, user_id=user, agent_id=agent), embedder=omnimem_embedder(mem))


def remember(memory: Any, text: str, scope: str = "/travel", categories: tuple[str, ...] = ("preference",),
             importance: float = 0.7) -> MemoryRecord:
    record: MemoryRecord = memory.remember(text, scope=scope, categories=list(categories), importance=importance)
    memory.drain_writes()
    return record


class ScriptedLLM(BaseLLM):
    """The agent's and the memory's LLM, scripted: the agent answers ``answer``; memory extraction keeps the
    user's input as the memory, filed under /family; every prompt the agent got is kept in ``prompts``."""

    answer: str = "Noted."
    prompts: list[str] = []

    def call(self, messages: Any, tools: Any = None, callbacks: Any = None, available_functions: Any = None,
             from_task: Any = None, from_agent: Any = None, response_model: Any = None) -> Any:
        text = messages if isinstance(messages, str) else "\n".join(str(m.get("content")) for m in messages)
        if response_model is ExtractedMemories:
            said = next(line for line in text.splitlines() if line.startswith("Input: "))
            return ExtractedMemories(memories=[said.removeprefix("Input: ")])
        if response_model is MemoryAnalysis:
            return MemoryAnalysis(suggested_scope="/family", categories=["family"], importance=0.7,
                                  extracted_metadata=ExtractedMetadata())
        if response_model is ConsolidationPlan:
            return ConsolidationPlan(actions=[], insert_new=True)
        assert response_model is None, f"unscripted structured call: {response_model}"
        self.prompts.append(text)
        return self.answer

    def supports_function_calling(self) -> bool:
        return True


def test_a_crewai_agent_remembers_into_omnimem_and_recalls_in_its_next_task(mem: Memory) -> None:
    def agent_of(user: str) -> tuple[Agent, ScriptedLLM]:
        llm = ScriptedLLM(model="scripted", prompts=[])
        memory = crewai.Memory(storage=OmnimemStorage(mem, user_id=user, agent_id="assistant"),
                               embedder=omnimem_embedder(mem), llm=llm)
        return Agent(role="assistant", goal="help the user", backstory="a helper", llm=llm, memory=memory), llm

    ana, ana_llm = agent_of("ana")
    assert ana.kickoff("My sister lives in Porto.").raw == "Noted."
    ana.memory.drain_writes()
    assert [(u.summary, u.scope.agent_id) for u in mem.units(user_id="ana")] == \
        [("My sister lives in Porto.", "assistant")]

    ana_llm.answer = "She lives in Porto."
    assert ana.kickoff("Where does my sister live?").raw == "She lives in Porto."
    assert "My sister lives in Porto." in ana_llm.prompts[-1]  # recalled from omnimem into the agent's prompt

    bob, bob_llm = agent_of("bob")
    bob.kickoff("Where does my sister live?")
    assert "Porto" not in bob_llm.prompts[-1]  # nothing of ana's reaches bob's agent
    ana.memory.drain_writes()
    bob.memory.drain_writes()


def test_the_storage_is_a_crewai_storage_backend(mem: Memory) -> None:
    assert isinstance(OmnimemStorage(mem, user_id="ana"), StorageBackend)


def test_crewai_memory_remembers_into_omnimem_and_recalls_from_it(mem: Memory) -> None:
    crew = crew_memory(mem, "ana", "planner")
    seat = remember(crew, "Ana prefers window seats on long flights")
    remember(crew, "The team offsite is in Porto in June", scope="/work/offsite", categories=("event",))

    matches = crew.recall("which seat does Ana like on a plane", depth="shallow", limit=1)
    assert [m.record.id for m in matches] == [seat.id] and matches[0].record.scope == "/travel"
    # what the crew learnt is omnimem's: its own search finds it in the storage's scope
    assert "window seats" in mem.search("window seat", user_id="ana", agent_id="planner").render()

    assert crew.list_scopes("/") == ["/travel", "/work"] and crew.list_categories() == {"preference": 1, "event": 1}
    assert [r.content for r in crew.list_records("/work")] == ["The team offsite is in Porto in June"]
    assert crew.info("/").record_count == 2


def test_records_round_trip_and_update_keeps_history(mem: Memory) -> None:
    storage = OmnimemStorage(mem, user_id="ana")
    record = MemoryRecord(content="Ana's locker is 12", scope="/office", categories=["fact"], importance=0.9,
                          metadata={"source": "chat", "n": 3}, source="session-1", private=True,
                          embedding=[1.0, 0.0, 0.0])
    storage.save([record])
    got = storage.get_record(record.id)
    assert got is not None and got.model_dump() == record.model_dump() and got.embedding == [1.0, 0.0, 0.0]

    storage.update(record.model_copy(update={"content": "Ana's locker is 14", "embedding": [0.0, 1.0, 0.0]}))
    got = storage.get_record(record.id)
    assert got is not None and got.content == "Ana's locker is 14" and storage.count() == 1
    units = mem.units(user_id="ana", include_superseded=True)
    assert sorted(u.summary for u in units) == ["Ana's locker is 12", "Ana's locker is 14"]

    hits = storage.search([0.0, 1.0, 0.0], limit=5)
    assert [(r.content, round(score, 6)) for r, score in hits] == [("Ana's locker is 14", 1.0)]
    assert storage.search([1.0, 0.0, 0.0], min_score=0.5) == []


def test_filters_delete_and_reset(mem: Memory) -> None:
    storage = OmnimemStorage(mem, user_id="ana")
    old = MemoryRecord(content="old note", scope="/a/x", categories=["c1"], embedding=[1.0, 0.0],
                       created_at=datetime.utcnow() - timedelta(days=10))
    keep = MemoryRecord(content="kept note", scope="/a/y", categories=["c2"], metadata={"k": 1}, embedding=[1.0, 0.1])
    other = MemoryRecord(content="other note", scope="/b", categories=["c1"], embedding=[0.9, 0.0])
    storage.save([old, keep, other])

    assert [r.content for r, _ in storage.search([1.0, 0.0], scope_prefix="/a")] == ["old note", "kept note"]
    assert [r.content for r, _ in storage.search([1.0, 0.0], categories=["c1"])] == ["old note", "other note"]
    assert [r.content for r, _ in storage.search([1.0, 0.0], metadata_filter={"k": 1})] == ["kept note"]
    assert storage.get_scope_info("/a").child_scopes == ["/a/x", "/a/y"]

    assert storage.delete() == 0  # nothing selected removes nothing
    assert storage.delete(older_than=datetime.utcnow() - timedelta(days=1)) == 1
    assert storage.delete(scope_prefix="/b", record_ids=[other.id]) == 1
    storage.reset("/nowhere")
    assert [r.content for r in storage.list_records()] == ["kept note"]
    storage.reset()
    assert storage.count() == 0 and mem.units(user_id="ana") == []


def test_two_users_and_two_agents_never_meet(mem: Memory) -> None:
    ana, bob = crew_memory(mem, "ana"), crew_memory(mem, "bob")
    ana_writer = crew_memory(mem, "ana", "writer")
    remember(ana, "Ana's passport number ends in 4411", scope="/docs")
    remember(bob, "Bob is allergic to shellfish", scope="/health")
    remember(ana_writer, "The writer agent drafts in British English", scope="/style")

    def recalled(memory: Any, query: str) -> list[str]:
        return [m.record.content for m in memory.recall(query, depth="shallow")]

    assert [r.content for r in bob.list_records()] == ["Bob is allergic to shellfish"]
    assert recalled(bob, "passport number ends in 4411") == []
    assert recalled(bob, "allergic to shellfish") == ["Bob is allergic to shellfish"]
    assert recalled(ana, "passport number ends in 4411") == ["Ana's passport number ends in 4411"]
    assert "The writer agent drafts in British English" not in recalled(ana, "drafts in British English")
    assert recalled(ana_writer, "drafts in British English") == ["The writer agent drafts in British English"]
    bob.reset()
    assert [r.content for r in ana.list_records()] == ["Ana's passport number ends in 4411"]
    assert ana_writer.info("/").record_count == 1 and bob.info("/").record_count == 0


def test_bad_input_and_a_remote_embedder_are_refused(mem: Memory) -> None:
    remote = Memory(url="http://127.0.0.1:9")  # never reached: refused before any call
    with pytest.raises(ConfigError, match="an omnimem Memory"):
        OmnimemStorage(object(), user_id="ana")
    with pytest.raises(ConfigError, match="in this process"):
        omnimem_embedder(remote)
    remote.close()
    with pytest.raises(InvalidInputError, match="user_id"):
        OmnimemStorage(mem, user_id=None)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="agent_id"):
        OmnimemStorage(mem, user_id="ana", agent_id=" ")
    storage = OmnimemStorage(mem, user_id="ana")
    with pytest.raises(InvalidInputError, match="record 1"):
        storage.save([MemoryRecord(content="ok"), "not a record"])  # type: ignore[list-item]
    with pytest.raises(InvalidInputError, match="query_embedding"):
        storage.search([])
    with pytest.raises(InvalidInputError, match="limit"):
        storage.search([1.0], limit=0)
    assert storage.count() == 0


def test_without_the_extra_the_error_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(sys.modules, "omnimem.integrations.crewai", raising=False)
    monkeypatch.setitem(sys.modules, "crewai.memory.types", None)  # as if crewai were missing
    with pytest.raises(MissingDependencyError, match=r"pip install 'omnimem\[crewai\]'"):
        import omnimem.integrations.crewai  # noqa: F401


def test_a_crew_keeps_its_memory_in_omnimem_per_user(mem: Memory) -> None:
    """``Crew(memory=crewai.Memory(storage=OmnimemStorage(...)))``: what one kickoff's task learnt is in omnimem,
    under the crew's user, and the next kickoff's task prompt recalls it; another user's crew recalls nothing."""
    from crewai import Crew, Task

    def crew_of(user: str) -> tuple[Crew, ScriptedLLM]:
        llm = ScriptedLLM(model="scripted", prompts=[])
        memory = crewai.Memory(storage=OmnimemStorage(mem, user_id=user, agent_id="crew"),
                               embedder=omnimem_embedder(mem), llm=llm)
        agent = Agent(role="assistant", goal="help the user", backstory="a helper", llm=llm)
        task = Task(description="The user says: {said}", expected_output="a short answer", agent=agent)
        return Crew(agents=[agent], tasks=[task], memory=memory), llm

    ana, ana_llm = crew_of("ana")
    ana.kickoff(inputs={"said": "My sister lives in Porto."})
    ana.memory.drain_writes()
    stored = [u.summary for u in mem.units(user_id="ana")]
    assert stored and all(u.scope.agent_id == "crew" for u in mem.units(user_id="ana"))
    assert any("Porto" in text for text in stored)

    ana_llm.answer = "She lives in Porto."
    assert ana.kickoff(inputs={"said": "Where does my sister live?"}).raw == "She lives in Porto."
    assert any("Porto" in line for line in ana_llm.prompts[-1].splitlines() if "sister" in line)

    bob, bob_llm = crew_of("bob")
    bob.kickoff(inputs={"said": "Where does my sister live?"})
    assert "Porto" not in bob_llm.prompts[-1]
    ana.memory.drain_writes()
    bob.memory.drain_writes()
