"""The LLM planner over a real OpenAI-compatible HTTP server (the scripted fake), with its caps.

One call analyses and expands the question, the queries are searched in parallel and fused, a
second call checks the context; a model that fails, is slow, or answers no JSON ends planning
with the context so far and a note saying why; calls, tokens and time are capped.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from fake_openai import FakeOpenAIServer, Reply, chat, error

from omnimem import Memory
from omnimem.llm import OpenAICompatibleLLM

TURNS = [
    {"speaker": "Ann", "text": "My daughter Lily started piano lessons this spring.", "time": "2024-05-01T10:00"},
    {"speaker": "Bob", "text": "The seed packets arrived for the garden.", "time": "2024-05-01T10:01"},
    {"speaker": "Ann", "text": "Lily adores painting sunflowers and horses.", "time": "2024-05-09T10:00"},
    {"speaker": "Bob", "text": "Fishing at the lake is my other weekend thing.", "time": "2024-05-20T10:01"},
]
QUESTION = "What does Ann's daughter like?"
ANALYSIS = chat(json.dumps({"needs": "the daughter's name, then what she likes",
                            "queries": ["Ann daughter name", "Lily likes"]}), prompt_tokens=140, completion_tokens=40)


def by_stage(analysis: Reply, check: Reply) -> Callable[[dict[str, Any]], Reply]:
    """Answer each request by the planner stage its system prompt names."""
    return lambda body: analysis if "You plan searches" in body["messages"][0]["content"] else check


@pytest.fixture
def memory(make_llm: Callable[..., OpenAICompatibleLLM]) -> Iterator[Callable[..., Memory]]:
    opened: list[Memory] = []

    def make(**settings: Any) -> Memory:
        mem = Memory(embedder="fake", llm=make_llm(), novelty=False, enrich="off", llm_summaries=False,
                     planner="llm", **settings)
        mem.add_dialogue(TURNS, user_id="u")
        opened.append(mem)
        return mem

    yield make
    for mem in opened:
        mem.close()


def test_analysis_expansion_and_an_adequate_check(server: FakeOpenAIServer, memory: Callable[..., Memory]) -> None:
    server.responder = by_stage(ANALYSIS, chat('{"adequate": true}', prompt_tokens=300, completion_tokens=10))
    ctx = memory().search(QUESTION, user_id="u")
    plan = ctx.plan
    assert plan is not None and plan.planner == "llm" and plan.note is None
    assert [r.queries for r in plan.rounds] == [(QUESTION, "Ann daughter name", "Lily likes")]
    assert "the daughter's name" in plan.rounds[0].reason
    assert (plan.calls, plan.prompt_tokens, plan.completion_tokens) == (2, 440, 50)  # as the server counted
    assert {"analysis", "search1", "check", "pack"} <= set(plan.ms)
    assert len(server.requests) == 2 and ctx.hits and ctx.tokens <= ctx.budget


def test_an_inadequate_context_gets_one_more_round(server: FakeOpenAIServer, memory: Callable[..., Memory]) -> None:
    server.responder = by_stage(ANALYSIS, chat(json.dumps(
        {"adequate": False, "missing": "her hobbies", "queries": ["Lily painting", "Lily likes"]})))
    plan = memory(plan_rounds=1).search(QUESTION, user_id="u").plan
    assert plan is not None and plan.note is None
    assert [r.queries for r in plan.rounds][1] == ("Lily painting",)  # "Lily likes" was searched already
    assert plan.rounds[1].reason == "the check: missing her hobbies"
    assert plan.calls == 2  # plan_rounds=1: the analysis and one check


def test_a_failing_model_returns_the_questions_own_search_and_says_so(
        server: FakeOpenAIServer, memory: Callable[..., Memory]) -> None:
    server.default = error(500, "model crashed")
    mem = memory()
    ctx = mem.search(QUESTION, user_id="u")
    assert ctx.plan is not None and "the analysis call failed" in (ctx.plan.note or "")
    assert [r.queries for r in ctx.plan.rounds] == [(QUESTION,)]
    plain = mem.search(QUESTION, user_id="u", planner="none")
    assert [h.unit.id for h in ctx.hits] == [h.unit.id for h in plain.hits]


def test_a_reply_that_is_not_json_ends_planning(server: FakeOpenAIServer, memory: Callable[..., Memory]) -> None:
    server.responder = by_stage(ANALYSIS, chat("Sure! The context looks fine."))
    plan = memory().search(QUESTION, user_id="u").plan
    assert plan is not None and plan.note == "the check reply was not the JSON object asked for"
    assert len(plan.rounds) == 1 and plan.calls == 2


def test_the_deadline_returns_the_best_context_so_far(server: FakeOpenAIServer,
                                                       memory: Callable[..., Memory]) -> None:
    server.responder = by_stage(ANALYSIS, chat('{"adequate": true}', delay=3.0))
    mem = memory(plan_deadline=0.5)
    started = time.monotonic()
    ctx = mem.search(QUESTION, user_id="u")
    assert time.monotonic() - started < 2.5  # not the slow check's 3 s
    assert ctx.plan is not None and ctx.plan.note == "deadline reached during the check"
    assert len(ctx.plan.rounds[0].queries) == 3 and ctx.hits  # the analysis's round is kept


def test_call_and_token_caps(server: FakeOpenAIServer, memory: Callable[..., Memory]) -> None:
    server.responder = by_stage(ANALYSIS, chat('{"adequate": true}'))
    plan = memory(plan_calls=1).search(QUESTION, user_id="u").plan
    assert plan is not None and plan.calls == 1 and plan.note == "call cap reached (1 calls) before the check"
    server.reset()
    plan = memory(plan_tokens=20).search(QUESTION, user_id="u").plan
    assert plan is not None and plan.calls == 0 and plan.note == "token cap reached (20 tokens) before the analysis"
    assert server.requests == []


ABANDONED_CALL = """
import time
from omnimem import Memory
from omnimem.llm.fake import FakeLLM
mem = Memory(embedder="fake", llm=FakeLLM('{"needs": "x", "queries": ["a"]}', latency=30.0), plan_deadline=1.0)
mem.add("ann likes tea", user_id="ann")
ctx = mem.search("what does ann like?", user_id="ann", planner="llm")
print(ctx.plan.note)
mem.close()
"""


def test_a_call_past_the_deadline_does_not_keep_the_process_alive() -> None:
    """The abandoned model call (30 s) neither holds up the search nor the interpreter's exit."""
    import subprocess
    import sys

    started = time.monotonic()
    out = subprocess.run([sys.executable, "-c", ABANDONED_CALL], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("deadline reached")  # during the analysis (before it, on a slow machine)
    assert time.monotonic() - started < 20  # not the call's 30 s
