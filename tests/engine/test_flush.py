"""``flush`` waits for queued enrichment on every engine (in memory, on disk, PostgreSQL, over HTTP)."""

from __future__ import annotations

from collections.abc import Callable

from omnimem import Memory


def test_graph_rows_land_after_flush(make_memory: Callable[..., Memory]) -> None:
    mem = make_memory(graph=True)  # graph extraction is queued enrichment (enrich="async", the default)
    unit = mem.add("Caroline met Melanie in Boston last May.", user_id="ann")
    assert unit.id is not None and mem.get(unit.id, user_id="ann")  # stored and readable before enrichment
    assert mem.flush(timeout=120) is True
    assert {"Caroline", "Melanie"} <= {e.name for e in mem.entities(user_id="ann")}
    assert mem.stats()["queue"]["pending"] == 0
    assert mem.flush(timeout=0) is True  # nothing left: done at once


def test_flush_with_nothing_queued_is_immediate(mem: Memory) -> None:
    mem.add("a note with no enrichment to do", user_id="ann")
    assert mem.flush() is True
