"""The graph writer reads a scope's candidate entities once per batch, and never a stale copy.

Prefetch (outside the insert transaction) reads the pool and hands it to the
writer of the same batch, which uses it only if the store's change counter has
not moved since; otherwise it reads the store again inside its transaction.
"""

from __future__ import annotations

from typing import Any

import pytest

from omnimem import Memory
from omnimem.results.entities import Entity
from omnimem.store.sqlite.graph import SQLiteGraphRows

SESSION = [
    {"speaker": "Caroline", "text": "I went to the LGBTQ support group in Boston yesterday."},
    {"speaker": "Melanie", "text": "Caroline, that sounds great. I painted a sunset by the lake."},
]


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[str | None]:
    """The user of every candidate-pool read (``owned_entities``) from now on."""
    seen: list[str | None] = []
    original = SQLiteGraphRows.owned_entities

    def counted(self: SQLiteGraphRows, user_id: str | None, agent_id: str | None) -> list[Entity]:
        seen.append(user_id)
        return original(self, user_id, agent_id)

    monkeypatch.setattr(SQLiteGraphRows, "owned_entities", counted)
    return seen


def described(mem: Memory, user: str) -> list[tuple[str, str, tuple[str, ...]]]:
    return sorted((e.name, e.type.value, tuple(sorted(e.aliases))) for e in mem.entities(user_id=user))


def test_one_read_per_batch_and_the_same_graph(reads: list[str | None]) -> None:
    with Memory(embedder="fake", graph=True, enrich="sync") as mem:
        for i in range(3):
            mem.add_dialogue(SESSION, user_id="u", session_id=f"s{i}")
        assert reads == ["u", "u", "u"]  # prefetch's read, used by the writer of the same batch
        names = described(mem, "u")
    assert ("Melanie", "Person", ()) in names and ("Boston", "Location", ()) in names


def test_a_write_between_prefetch_and_writer_makes_the_writer_read_again(reads: list[str | None]) -> None:
    with Memory(embedder="fake", graph=True, enrich="sync") as mem:
        assert mem.graph is not None
        graph = mem.graph
        mem.add_dialogue(SESSION, user_id="u", session_id="s0")
        extract = graph.extract

        def extract_then_forget(units: Any) -> Any:
            out = extract(units)  # prefetch read the pool with session s0's entities in it...
            mem.forget(user_id="u", session_id="s0")  # ...which a write then removes
            return out

        graph.extract = extract_then_forget  # type: ignore[method-assign]
        reads.clear()
        mem.add_dialogue(SESSION, user_id="u", session_id="s1")
        assert reads == ["u", "u"]  # the writer did not trust the handed pool
        entities = mem.entities(user_id="u")
        assert [e.name for e in entities if e.name in ("Boston", "Melanie")].count("Melanie") == 1
        for entity in entities:  # every entity is one the store holds, linked to a live unit
            assert mem.graph.details(entity)["units"]


def test_a_rolled_back_batch_leaves_nothing_behind(reads: list[str | None]) -> None:
    with Memory(embedder="fake", graph=True, enrich="sync") as mem:
        assert mem.graph is not None
        graph = mem.graph
        mem.add_dialogue(SESSION, user_id="u", session_id="s0")
        writer = graph.writer

        def failing(units: Any, extractions: Any) -> Any:
            write = writer(units, extractions)

            def run(rows: Any) -> None:
                write(rows)  # entities added to the writer's pool, then the transaction fails
                raise RuntimeError("disk full")

            return run

        graph.writer = failing  # type: ignore[method-assign]
        turn = [{"speaker": "Jon", "text": "Gina opened a dance studio in Seattle."}]
        with pytest.raises(Exception, match="disk full"):
            mem.add_dialogue(turn, user_id="u", session_id="s1")
        graph.writer = writer  # type: ignore[method-assign]
        mem.add(turn[0]["text"], user_id="other")  # a write in between, as in a busy store
        mem.add_dialogue(turn, user_id="u", session_id="s2")
        seattles = [e for e in mem.entities(user_id="u") if e.name == "Seattle"]
        assert len(seattles) == 1 and graph.details(seattles[0])["units"]
