"""A model endpoint that is broken, overloaded or lying, over real HTTP (the loopback fake model).

Long replies are cut near their token cap and parsed in linear time; a malformed reply is a typed
``LLMError`` everywhere (a planned search keeps its rounds and says why in ``plan.note``, ``/v1/ask``
answers 502, the CLI one line, MCP a typed tool error); a call abandoned at a deadline ends by that
deadline, with no retries; usage the server reports is never trusted below the local count.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fake_openai import FakeOpenAIServer, Reply, chat, cut_off, raw

from omnimem import Memory
from omnimem.llm import LLMError, LLMUnavailableError, OpenAICompatibleLLM
from omnimem.llm.structured import ReplyFormatProblem, extract_json
from tests.serving import LiveServer

CUT = 200 * 8  # what a reply capped at 200 tokens is cut to (omnimem.llm.base.reply_bound(200))

ASK = [{"role": "user", "content": "plan a search"}]
TURNS = [
    {"speaker": "Ann", "text": "My daughter Lily started piano lessons this spring.", "time": "2024-05-01T10:00"},
    {"speaker": "Ann", "text": "Lily adores painting sunflowers and horses.", "time": "2024-05-09T10:00"},
    {"speaker": "Bob", "text": "Fishing at the lake is my other weekend thing.", "time": "2024-05-20T10:01"},
]
QUESTION = "What does Ann's daughter like?"
ANALYSIS = json.dumps({"needs": "the daughter, then her likes", "queries": ["Ann daughter", "Lily likes"]})

# Every malformed reply a broken or hostile endpoint can send with HTTP 200.
MALFORMED: dict[str, Reply] = {
    "not-json": raw(b"<html><body>502 Bad Gateway</body></html>"),
    "cut-off": raw(cut_off(ANALYSIS)),
    "nested-100000": raw(b"[" * 100_000 + b"]" * 100_000),
    "nested-object": raw(b'{"choices": ' * 100_000 + b"1" + b"}" * 100_000),
    "wrong-shape": raw(b'{"choices": "none", "usage": {"prompt_tokens": "many"}}'),
    "content-not-text": raw(b'{"object": "chat.completion", "choices": [{"message": {"content": 7}}]}'),
}


def is_analysis(body: dict[str, Any]) -> bool:
    return "You plan searches" in body["messages"][0]["content"]


@pytest.fixture
def memory(make_llm: Callable[..., OpenAICompatibleLLM], tmp_path: Path) -> Iterator[Callable[..., Memory]]:
    """A store holding TURNS whose model is the fake server (``memory(plan_deadline=1)``)."""
    opened: list[Memory] = []

    def make(llm: OpenAICompatibleLLM | None = None, **settings: Any) -> Memory:
        mem = Memory(tmp_path / f"store{len(opened)}", embedder="fake", llm=llm or make_llm(), novelty=False,
                     enrich="off", llm_summaries=False, **settings)
        mem.add_dialogue(TURNS, user_id="ann")
        opened.append(mem)
        return mem

    yield make
    for mem in opened:
        mem.close()


# -- 1. a long reply --------------------------------------------------------------------------


@pytest.mark.parametrize("filler", ["{", "<think>"])
def test_a_megabyte_reply_is_cut_near_its_token_cap(server: FakeOpenAIServer, make_llm: Any, filler: str) -> None:
    server.push(chat(filler * (1_000_000 // len(filler))))
    reply = make_llm().complete(ASK, max_tokens=200)
    assert len(reply.text) == CUT and reply.finish_reason == "length"
    assert server.requests[0]["max_tokens"] == 200


def test_enrichment_calls_send_a_token_cap_and_get_a_bounded_reply(server: FakeOpenAIServer, make_llm: Any) -> None:
    from omnimem.engine.ingest.summarise import SummaryReply

    server.push(chat("<think>" * 150_000), chat('{"summary": "Ann likes tea."}'))
    llm = make_llm(max_tokens=512)
    assert llm.complete_json(ASK, SummaryReply).summary == "Ann likes tea."  # the long reply was repaired
    assert [body["max_tokens"] for body in server.requests] == [512, 512]
    shown_back = server.requests[1]["messages"][-2]["content"]  # the repair shows the model its reply
    assert len(shown_back) == 512 * 8


@pytest.mark.parametrize("filler", ["{", "[", '["', "<think>", "```", '{"a": "'])
def test_finding_json_reads_each_character_a_bounded_number_of_times(
        filler: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from omnimem.llm import structured

    read = 0

    class Counting(json.JSONDecoder):
        """Counts the characters each decode reads: to its value's end, its error, or its depth limit."""

        def raw_decode(self, s: str, idx: int = 0) -> tuple[Any, int]:
            nonlocal read
            try:
                value, end = super().raw_decode(s, idx)
            except json.JSONDecodeError as exc:
                read += exc.pos - idx + 1
                raise
            except RecursionError:
                read += len(s) - idx
                raise
            read += end - idx
            return value, end

    monkeypatch.setattr(structured, "_DECODER", Counting())
    text = filler * (200_000 // len(filler))
    with pytest.raises(ReplyFormatProblem):
        extract_json(text)
    assert read <= 6 * len(text)  # from every opener to the end of the text would be 10,000 times


def test_the_planner_given_a_megabyte_of_braces_ends_with_a_note(
        server: FakeOpenAIServer, memory: Callable[..., Memory]) -> None:
    server.default = chat("{" * 1_000_000)
    ctx = memory(planner="llm").search(QUESTION, user_id="ann")
    assert ctx.plan is not None and ctx.plan.note == "the analysis reply was not the JSON object asked for"
    assert ctx.hits and [r.queries for r in ctx.plan.rounds] == [(QUESTION,)]
    assert ctx.plan.completion_tokens <= CUT  # counted on the cut reply


def test_a_reply_with_thinking_and_a_fence_still_plans(server: FakeOpenAIServer,
                                                       memory: Callable[..., Memory]) -> None:
    analysis = "<think>{maybe} [or not]</think>Here:\n```json\n" + ANALYSIS + "\n```"
    server.responder = lambda body: chat(analysis) if is_analysis(body) else chat('{"adequate": true}')
    plan = memory(planner="llm").search(QUESTION, user_id="ann").plan
    assert plan is not None and plan.note is None
    assert plan.rounds[0].queries == (QUESTION, "Ann daughter", "Lily likes")


# -- 2. a malformed reply ---------------------------------------------------------------------


@pytest.mark.parametrize("kind", sorted(MALFORMED))
def test_a_malformed_reply_is_an_llm_error(server: FakeOpenAIServer, make_llm: Any, kind: str) -> None:
    server.push(MALFORMED[kind])
    llm = make_llm()
    with pytest.raises(LLMError, match="answered"):
        llm.complete(ASK)
    assert llm.usage().failures == 1 and len(server.requests) == 1  # a reply that came back is not retried


@pytest.fixture
def live(memory: Callable[..., Memory]) -> Iterator[LiveServer]:
    served = LiveServer(memory(), auth=False, rate_limit=None)
    yield served
    served.stop()


@pytest.mark.parametrize("kind", sorted(MALFORMED))
def test_over_http_a_planned_search_keeps_its_rounds_and_ask_is_a_502(
        server: FakeOpenAIServer, live: LiveServer, kind: str) -> None:
    server.default = MALFORMED[kind]
    with httpx.Client(base_url=live.url, timeout=30) as client:
        found = client.post("/v1/search", json={"query": QUESTION, "user_id": "ann", "planner": "llm"})
        assert found.status_code == 200, found.text
        plan = found.json()["plan"]
        assert plan["note"].startswith("the analysis call failed (LLMError: ") and found.json()["hits"]
        assert [r["queries"] for r in plan["rounds"]] == [[QUESTION]]
        asked = client.post("/v1/ask", json={"question": QUESTION, "user_id": "ann"})
        assert asked.status_code == 502
        assert asked.json()["error"] == "LLMError" and "not a" in asked.json()["message"]


def test_a_malformed_reply_to_the_check_keeps_the_first_round(server: FakeOpenAIServer,
                                                              memory: Callable[..., Memory]) -> None:
    server.responder = lambda body: chat(ANALYSIS) if is_analysis(body) else MALFORMED["nested-100000"]
    plan = memory(planner="llm").search(QUESTION, user_id="ann").plan
    assert plan is not None and plan.note is not None and plan.note.startswith("the check call failed (LLMError")
    assert plan.rounds[0].queries == (QUESTION, "Ann daughter", "Lily likes")


def test_reply_content_nested_deep_ends_planning_with_a_note(server: FakeOpenAIServer,
                                                             memory: Callable[..., Memory]) -> None:
    deep = '{"a": ' * 100_000 + "1" + "}" * 100_000
    with pytest.raises(ReplyFormatProblem):
        extract_json(deep)  # past the decoder's depth: no JSON here, never a RecursionError
    server.default = chat(deep)
    plan = memory(planner="llm").search(QUESTION, user_id="ann").plan
    assert plan is not None and plan.note == "the analysis reply was not the JSON object asked for"


def test_the_cli_says_one_line_and_exits_non_zero(server: FakeOpenAIServer, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from omnimem.cli.commands import app

    for name, value in {"OMNIMEM_EMBEDDER": "fake", "OMNIMEM_LLM_BASE_URL": server.url, "OMNIMEM_LLM_MODEL": "m",
                        "OMNIMEM_LLM_MAX_RETRIES": "0", "OMNIMEM_ENRICH": "off"}.items():
        monkeypatch.setenv(name, value)
    store = str(tmp_path / "cli-store")
    runner = CliRunner()
    assert runner.invoke(app, ["add", "Lily adores painting horses", "--speaker", "Ann", "--store", store,
                               "--user-id", "ann"]).exit_code == 0
    for kind in sorted(MALFORMED):
        server.reset()
        server.default = MALFORMED[kind]
        asked = runner.invoke(app, ["ask", QUESTION, "--store", store, "--user-id", "ann"])
        assert asked.exit_code != 0 and isinstance(asked.exception, SystemExit), (kind, asked.exception)
        lines = asked.stderr.strip().splitlines()
        assert len(lines) == 1 and "answered" in lines[0] and "Traceback" not in asked.output, (kind, asked.output)
        found = runner.invoke(app, ["search", QUESTION, "--store", store, "--user-id", "ann", "--planner", "llm",
                                    "--json"])
        assert found.exit_code == 0, (kind, found.output)
        assert json.loads(found.stdout)["plan"]["note"].startswith("the analysis call failed (LLMError")


def test_mcp_answers_a_typed_llm_error(server: FakeOpenAIServer, memory: Callable[..., Memory]) -> None:
    from anyio.from_thread import start_blocking_portal
    from fastmcp import Client

    from omnimem.mcp import create_mcp

    mem = memory()
    with start_blocking_portal() as portal:
        client: Client[Any] = Client(create_mcp(mem))
        with portal.wrap_async_context_manager(client):
            for kind in sorted(MALFORMED):
                server.reset()
                server.default = MALFORMED[kind]
                asked = portal.call(lambda: client.call_tool("ask", {"question": QUESTION, "user_id": "ann"},
                                                             raise_on_error=False))
                assert asked.is_error
                assert json.loads(asked.content[0].text)["error"] == "LLMError", (kind, asked.content[0].text)
                found = portal.call(lambda: client.call_tool("search", {"query": QUESTION, "user_id": "ann",
                                                                        "planner": "llm"}, raise_on_error=False))
                assert not found.is_error and found.structured_content["plan"]["note"].startswith(
                    "the analysis call failed (LLMError")


# -- 3. a call abandoned at the deadline ------------------------------------------------------


def test_under_a_deadline_one_attempt_bounded_by_what_is_left(server: FakeOpenAIServer, make_llm: Any) -> None:
    from omnimem.llm.base import call_deadline

    server.default = chat("late", delay=30.0)
    llm = make_llm(timeout=60.0, max_retries=3)
    started = time.monotonic()
    with call_deadline(time.monotonic() + 0.3), pytest.raises(LLMUnavailableError, match="timed out"):
        llm.complete(ASK)
    assert time.monotonic() - started < 20  # not the 60 s timeout, nor four of them
    assert len(server.requests) == 1 and llm.usage().retries == 0
    with call_deadline(time.monotonic() - 1), pytest.raises(LLMUnavailableError, match="deadline passed"):
        llm.complete(ASK)  # a deadline already gone sends nothing
    assert len(server.requests) == 1


def test_a_busy_slot_is_waited_for_at_most_until_the_deadline(server: FakeOpenAIServer, make_llm: Any) -> None:
    from omnimem.llm.base import call_deadline

    server.default = chat("late", delay=30.0)
    llm = make_llm(concurrency=1, timeout=60.0, max_retries=0)
    holder = threading.Thread(target=llm.complete, args=(ASK,), daemon=True)  # holds the one slot
    holder.start()
    while not server.requests:
        time.sleep(0.01)
    with call_deadline(time.monotonic() + 0.2), pytest.raises(LLMUnavailableError, match="slots was free"):
        llm.complete(ASK)
    assert len(server.requests) == 1  # the second call never reached the model
    server.reset()  # the held request answers now
    holder.join(20)


def test_a_planner_call_abandoned_at_the_deadline_ends_by_it(server: FakeOpenAIServer, make_llm: Any,
                                                             memory: Callable[..., Memory]) -> None:
    server.default = chat(ANALYSIS, delay=60.0)
    mem = memory(llm=make_llm(timeout=60.0, max_retries=3), planner="llm", plan_deadline=0.5)
    ctx = mem.search(QUESTION, user_id="ann")
    assert ctx.plan is not None and ctx.plan.note == "deadline reached during the analysis"
    calls = [t for t in threading.enumerate() if t.name == "omnimem-plan-call"]
    for thread in calls:
        thread.join(20)  # the model answers after 60 s: a thread alive then waits for it
    assert not any(t.is_alive() for t in calls)
    assert len(server.requests) == 1  # no retries after the deadline


# -- 5. usage the provider reports -------------------------------------------------------------


def test_usage_below_zero_counts_as_zero(server: FakeOpenAIServer, make_llm: Any) -> None:
    server.push(chat("hi", prompt_tokens=-1_000_000, completion_tokens=-5))
    llm = make_llm()
    reply = llm.complete(ASK)
    assert (reply.prompt_tokens, reply.completion_tokens) == (0, 0)
    assert llm.usage().total_tokens == 0


def test_the_token_cap_counts_the_larger_of_reported_and_local_tokens(
        server: FakeOpenAIServer, memory: Callable[..., Memory]) -> None:
    def planner_run(prompt_tokens: int) -> Any:
        asked = iter(range(100))

        def reply(body: dict[str, Any]) -> Reply:
            if is_analysis(body):
                return chat(ANALYSIS, prompt_tokens=prompt_tokens, completion_tokens=prompt_tokens)
            verdict = {"adequate": False, "missing": "more", "queries": [f"painting lesson {next(asked)}"]}
            return chat(json.dumps(verdict), prompt_tokens=prompt_tokens, completion_tokens=prompt_tokens)

        server.reset()
        server.responder = reply
        mem = memory(planner="llm", plan_calls=50, plan_rounds=49, plan_tokens=700)
        return mem.search(QUESTION, user_id="ann").plan

    honest = planner_run(0)  # no usage reported: the local counts
    lying = planner_run(-1_000_000)
    assert honest.calls == lying.calls < 10 and lying.note.startswith("token cap reached")  # not 50
    assert lying.prompt_tokens == honest.prompt_tokens > 0 and lying.completion_tokens == honest.completion_tokens
    low = planner_run(1)  # a count below ours is ours
    assert low.calls == honest.calls and low.prompt_tokens == honest.prompt_tokens
