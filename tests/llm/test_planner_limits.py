"""The LLM planner within its limits, whatever the model proposes: clipped queries, a deadline per round, and
the caller's search slot held for ranking and packing only (:mod:`omnimem.contract.caller`)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from fake_openai import FakeOpenAIServer, Reply, chat
from test_planner_llm import QUESTION, by_stage, memory  # noqa: F401 - memory: the fixture, a Memory per test

from omnimem import Memory
from omnimem.engine.retrieval.planner import REASON_CHARS
from omnimem.contract.caller import search_slots

ADEQUATE = chat('{"adequate": true}')


def analysis(queries: list[str], needs: str = "the daughter's name") -> Reply:
    return chat(json.dumps({"needs": needs, "queries": queries}))


def test_proposed_queries_are_clipped_to_max_query_chars(server: FakeOpenAIServer,
                                                         memory: Callable[..., Memory]) -> None:
    proposed = [f"{word} " * 50 for word in ("lily", "piano", "horses")]  # 250 characters each
    server.responder = by_stage(analysis(proposed, needs="names " * 80), ADEQUATE)
    plan = memory(max_query_chars=40).search(QUESTION, user_id="u").plan
    assert plan is not None and plan.note is None
    (searched,) = [r.queries for r in plan.rounds]
    assert searched[0] == QUESTION and len(searched) == 4
    assert all(len(q) <= 40 for q in searched) and searched[1].startswith("lily lily")
    assert len(plan.rounds[0].reason) <= REASON_CHARS and plan.rounds[0].reason.endswith("…")


def test_queries_of_750000_characters_are_neither_searched_nor_echoed_whole(
        server: FakeOpenAIServer, memory: Callable[..., Memory]) -> None:
    proposed = [f"{word} " * 150_000 for word in ("lily", "piano", "horad")]  # 750,000 characters each
    server.responder = by_stage(analysis(proposed), ADEQUATE)
    mem = memory()
    ctx = mem.search(QUESTION, user_id="u")
    assert ctx.plan is not None
    assert all(len(q) <= mem.settings.max_query_chars for q in ctx.plan.queries)
    assert len(json.dumps(ctx.to_dict())) < 200_000


@contextmanager
def slots(wait: Callable[[int], None]) -> Iterator[list[str]]:
    """A search slot that records "enter"/"leave" and calls ``wait(n)`` before its ``n``-th entry is held."""
    events: list[str] = []

    @contextmanager
    def slot() -> Iterator[None]:
        wait(events.count("enter") + 1)
        events.append("enter")
        try:
            yield
        finally:
            events.append("leave")

    with search_slots(slot):
        yield events


def test_a_deadline_that_passes_between_rounds_stops_the_next_rounds_searches(
        server: FakeOpenAIServer, memory: Callable[..., Memory]) -> None:
    inadequate = chat(json.dumps({"adequate": False, "missing": "her hobbies", "queries": ["Lily painting"]}))
    server.responder = by_stage(analysis(["Lily likes"]), inadequate)
    mem = memory(plan_rounds=2, plan_deadline=5)
    started = time.monotonic()

    def wait(entry: int) -> None:  # the third slot (round 2's searches) frees only after the deadline
        if entry == 3:
            time.sleep(max(0.0, started + 6 - time.monotonic()))

    with slots(wait) as events:
        plan = mem.search(QUESTION, user_id="u").plan
    assert plan is not None and plan.note == "deadline reached before round 2's searches"
    assert [r.queries for r in plan.rounds] == [(QUESTION, "Lily likes")]
    assert plan.calls == 2  # the analysis and the first check: no round 2, no second check
    assert events == ["enter", "leave"] * 4  # round 1, its packing, round 2 (not searched), the last packing


def test_the_model_is_called_with_no_slot_held(server: FakeOpenAIServer, memory: Callable[..., Memory]) -> None:
    held: list[bool] = []  # True while the slot is held
    entries: list[str] = []
    seen: list[bool] = []  # whether it was held at each model call

    def record(body: dict[str, Any]) -> Reply:
        seen.append(bool(held))
        return by_stage(analysis(["Lily likes"]), ADEQUATE)(body)

    server.responder = record

    @contextmanager
    def slot() -> Iterator[None]:
        held.append(True)
        entries.append("slot")
        try:
            yield
        finally:
            held.pop()

    mem = memory()
    with search_slots(slot):
        ctx = mem.search(QUESTION, user_id="u")
        assert ctx.plan is not None and ctx.plan.calls == 2 and seen == [False, False]
        assert len(entries) == 2  # round 1's ranking, then its packing (the check found it adequate)
        assert mem.search(QUESTION, user_id="u", planner="none").hits
        assert len(entries) == 3  # a plain search takes the slot once, for all of it
    assert held == []
