"""A slow model slows no other user: a search waiting for the model holds none of the server's search slots.

The server runs with ``search_concurrency=2``; the model (a loopback OpenAI-compatible endpoint)
holds every request until the test releases it. Six planned searches and two asks all wait in the
model at once, and meanwhile another user's plain search is answered.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from benchmarks.serving.slow_model import SlowModel
from omnimem import Memory
from omnimem.llm import LLMConfig, OpenAICompatibleLLM
from tests.server.test_guard import HeldSearches
from tests.serving import LiveServer

TURNS = [
    {"speaker": "Ann", "text": "My daughter Lily started piano lessons this spring.", "time": "2024-05-01T10:00"},
    {"speaker": "Bob", "text": "The seed packets arrived for the garden.", "time": "2024-05-01T10:01"},
    {"speaker": "Ann", "text": "Lily adores painting sunflowers and horses.", "time": "2024-05-09T10:00"},
]


@pytest.fixture
def model() -> Iterator[SlowModel]:
    with SlowModel(delay=120) as held:  # answers once released (the test's end), long before its own delay
        yield held


@pytest.fixture
def served(tmp_path: Path, model: SlowModel) -> Iterator[LiveServer]:
    llm = OpenAICompatibleLLM(LLMConfig(base_url=model.url, model="slow-model", api_key="sk-test", timeout=120,
                                        max_retries=0, concurrency=16))
    with Memory(tmp_path / "store", embedder="fake", llm=llm, plan_deadline=120, novelty=False, enrich="off",
                llm_summaries=False) as memory:
        memory.add_dialogue(TURNS, user_id="ann")
        memory.add("Carol keeps bees on her roof.", user_id="carol")
        live = LiveServer(memory, auth=False, rate_limit=None, search_concurrency=2)
        try:
            yield live
        finally:
            model.release()
            live.stop()


def test_a_plain_search_is_answered_while_planned_searches_and_asks_wait_for_the_model(
        served: LiveServer, model: SlowModel) -> None:
    planned = {"query": "What does Ann's daughter like?", "user_id": "ann", "planner": "llm"}
    asked = {"question": "What does Ann's daughter like?", "user_id": "ann"}
    with ThreadPoolExecutor(max_workers=8) as pool:
        waiting = [pool.submit(httpx.post, f"{served.url}/v1/search", json=planned, timeout=120) for _ in range(6)]
        waiting += [pool.submit(httpx.post, f"{served.url}/v1/ask", json=asked, timeout=120) for _ in range(2)]
        try:
            assert model.wait_in_flight(8, timeout=30), f"only {model.in_flight} of 8 reached the model"

            plain = httpx.post(f"{served.url}/v1/search", json={"query": "bees", "user_id": "carol"}, timeout=60)

            assert plain.status_code == 200
            assert [hit["text"] for hit in plain.json()["hits"]] == ["Carol keeps bees on her roof."]
            assert model.in_flight == 8 and not any(f.done() for f in waiting)  # all still in the model
        finally:
            model.release()
        answers = [f.result() for f in waiting]
    assert [a.status_code for a in answers] == [200] * 8
    plans = [a.json()["plan"] for a in answers[:6]]
    assert all(p["note"] is None and p["calls"] == 2 for p in plans)  # the analysis and the check
    assert all(a.json()["context"] for a in answers[6:])


def test_a_planned_search_still_ranks_inside_a_slot(tmp_path: Path, model: SlowModel) -> None:
    """``search_concurrency=1``: while a plain search holds the only slot, a planned search's model answer comes
    back but its ranking waits for the slot, and it finishes after the plain one gives it up."""
    model.release()
    llm = OpenAICompatibleLLM(LLMConfig(base_url=model.url, model="slow-model", api_key="sk-test", timeout=30,
                                        max_retries=0))
    with Memory(tmp_path / "store", embedder="fake", llm=llm, plan_deadline=60, novelty=False, enrich="off",
                llm_summaries=False) as memory:
        memory.add_dialogue(TURNS, user_id="ann")
        held = HeldSearches(memory)
        live = LiveServer(memory, auth=False, rate_limit=None, search_concurrency=1)
        try:
            with ThreadPoolExecutor(max_workers=2) as pool:
                plain = pool.submit(httpx.post, f"{live.url}/v1/search", json={"query": "held piano"}, timeout=60)
                assert held.holding.acquire(timeout=10)  # the plain search holds the slot, inside its packing
                assert held.ranked.acquire(timeout=0)
                planned = pool.submit(httpx.post, f"{live.url}/v1/search",
                                      json={"query": "held daughter", "planner": "llm"}, timeout=60)
                assert _answered(model, 1)  # its analysis was answered
                assert not held.ranked.acquire(timeout=0.5)  # but its ranking waits for the slot
                assert not planned.done()
                held.release.set()
                assert plain.result().status_code == 200
                assert planned.result().status_code == 200 and planned.result().json()["plan"]["rounds"]
        finally:
            held.release.set()
            live.stop()


def _answered(model: SlowModel, count: int) -> bool:
    """Whether the model has answered ``count`` requests within a few seconds."""
    deadline = time.monotonic() + 10
    while model.received < count or model.in_flight:
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True
