"""OpenTelemetry: one span per operation with attributes that leak nothing, stage child spans, one span
per enrichment job, trace context across HTTP, and nothing at all when no tracer provider is set."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx
import pytest
from opentelemetry.trace import SpanKind, StatusCode

from omnimem import Memory
from omnimem.errors import InvalidInputError
from omnimem.llm.base import Message
from omnimem.llm.fake import FakeLLM
from tests.integrations.conftest import Spans
from tests.serving import LiveServer, ServedMemory

ROOT = Path(__file__).resolve().parents[2]
SECRET = "my passport number is X1234567 and the safe code is 0451"
TURNS = [
    {"speaker": "ana", "text": "I moved to Lisbon in March.", "time": "2024-03-02T10:00"},
    {"speaker": "ben", "text": "How do you like the tram?", "time": "2024-03-02T10:01"},
    {"speaker": "ana", "text": "The tram up the hill is lovely.", "time": "2024-03-02T10:02"},
]


def attribute_text(spans: Spans) -> str:
    """Every attribute value of every finished span, as one string (to look for leaked content)."""
    return json.dumps([{k: str(v) for k, v in (s.attributes or {}).items()} for s in spans.finished()])


def test_add_and_search_spans_carry_counts_and_no_content(spans: Spans) -> None:
    with Memory(embedder="fake") as mem:
        added = mem.add(SECRET, user_id="u1", speaker="ana")
        mem.add(SECRET, user_id="u1", speaker="ana")  # a duplicate: skipped
        ctx = mem.search("what is the safe code", user_id="u1", budget=300)
    adds = spans.named("omnimem.add")
    assert len(adds) == 2
    assert adds[0].attributes is not None and adds[1].attributes is not None
    assert adds[0].attributes["omnimem.units.accepted"] == 1 and adds[1].attributes["omnimem.units.skipped"] == 1
    assert adds[0].attributes["omnimem.backend"] == "memory"
    assert adds[0].attributes["omnimem.input.chars"] == len(SECRET)
    search = spans.one("omnimem.search")
    a = search.attributes
    assert a is not None
    assert a["omnimem.budget"] == 300 and a["omnimem.tokens_used"] == ctx.tokens > 0
    assert a["omnimem.hits"] == len(ctx.hits) == 1
    assert list(a["omnimem.levels"]) == [sum(h.level == n for h in ctx.hits) for n in (1, 2, 3)]  # type: ignore[arg-type]
    assert a["omnimem.scope.user_id"] is True  # that a user was named, not who
    leaked = attribute_text(spans)
    for secret in ("X1234567", "0451", "safe code", "u1", "ana", added.id):
        assert secret not in leaked
    assert all(s.status.status_code is StatusCode.UNSET for s in spans.finished())


def test_search_stages_are_child_spans(spans: Spans) -> None:
    with Memory(embedder="fake") as mem:
        mem.add_dialogue(TURNS, user_id="u")
        mem.search("tram", user_id="u")
    search = spans.one("omnimem.search")
    assert search.context is not None
    children = {s.name for s in spans.finished() if s.parent is not None and s.parent.span_id == search.context.span_id}
    assert children == {"omnimem.search.embed", "omnimem.search.dense", "omnimem.search.sparse",
                        "omnimem.search.signals", "omnimem.search.pack"}
    for name in children:
        stage = spans.one(name)
        assert stage.start_time is not None and stage.end_time is not None and stage.end_time >= stage.start_time
    pack = spans.one("omnimem.search.pack")  # the default packing's own stages, inside it
    assert pack.context is not None
    inside = [s for s in spans.finished() if s.parent is not None and s.parent.span_id == pack.context.span_id]
    assert {s.name for s in inside} == {"omnimem.search.fit", "omnimem.search.rows", "omnimem.search.finish"}
    assert all(pack.start_time <= s.start_time <= s.end_time <= pack.end_time for s in inside)  # type: ignore[operator]
    dialogue = spans.one("omnimem.add_dialogue").attributes
    assert dialogue is not None and dialogue["omnimem.turns"] == 3 and dialogue["omnimem.units.accepted"] == 3


def test_trace_content_puts_the_query_and_text_in(spans: Spans) -> None:
    with Memory(embedder="fake", trace_content=True) as mem:
        added = mem.add(SECRET, user_id="u1")
        mem.search("safe code", user_id="u1")
    add, search = spans.one("omnimem.add").attributes, spans.one("omnimem.search").attributes
    assert add is not None and search is not None
    assert add["omnimem.text"] == SECRET and add["omnimem.unit_id"] == added.id
    assert search["omnimem.query"] == "safe code" and search["omnimem.scope.user_id"] == "u1"
    assert tuple(search["omnimem.hit_ids"]) == (added.id,)  # type: ignore[arg-type]


def test_ask_contains_its_search_and_forget_counts(spans: Spans, tmp_path: Path) -> None:
    with Memory(tmp_path / "m", embedder="fake") as mem:
        mem.add_dialogue(TURNS, user_id="u")
        answer = mem.ask("where did ana move", user_id="u", budget=200)
        removed = mem.forget(user_id="u")
    ask = spans.one("omnimem.ask")
    search = spans.one("omnimem.search")
    assert ask.context is not None and search.parent is not None and search.parent.span_id == ask.context.span_id
    a = ask.attributes
    assert a is not None and a["omnimem.answered"] is False and a["omnimem.llm.calls"] == 0  # offline
    assert a["omnimem.hits"] == len(answer.evidence) and a["omnimem.budget"] == 200
    forget = spans.one("omnimem.forget").attributes
    assert forget is not None and forget["omnimem.units.removed"] == removed == 3
    assert forget["omnimem.backend"] == "sqlite" and forget["omnimem.all"] is False


def test_a_failed_operation_names_the_error_class_only(spans: Spans) -> None:
    with Memory(embedder="fake") as mem:
        with pytest.raises(InvalidInputError):
            mem.search("x" * 30_000)  # over max_query_chars; the message must not carry the query
    search = spans.one("omnimem.search")
    assert search.status.status_code is StatusCode.ERROR and search.status.description == "InvalidInputError"
    assert search.attributes is not None and search.attributes["error.type"] == "InvalidInputError"
    assert not search.events  # no exception event: its message could quote the input


def summarise(messages: Sequence[Message]) -> str:
    return json.dumps({"summary": "A long note about planning."})


def test_one_enrich_span_per_job(spans: Spans, tmp_path: Path) -> None:
    long_text = "The planning meeting covered hiring, the office lease and the roadmap. " * 16
    with Memory(tmp_path / "m", embedder="fake", llm=FakeLLM(summarise)) as mem:
        first = mem.add(long_text, user_id="u")
        second = mem.add("The garden club swapped seeds, planned the spring fair and fixed the greenhouse. " * 16,
                         user_id="u")
        assert mem.flush(timeout=30)
    mine = {f"enrich:{first.id}", f"enrich:{second.id}"}
    # this store's jobs, by key: job ids are per store, and a thread of another test's store may still
    # be finishing a job of its own (id 1 too) while this test's provider records
    enrich = [s for s in spans.named("omnimem.engine.enrich") if s.attributes and s.attributes["omnimem.job.key"] in mine]
    assert len(enrich) == 2  # one per unit's summary job
    assert {s.attributes["omnimem.job.key"] for s in enrich if s.attributes} == mine
    assert {s.attributes["omnimem.job.kind"] for s in enrich if s.attributes} == {"enrich"}
    assert all(s.status.status_code is StatusCode.UNSET for s in enrich)


def test_a_failed_job_marks_its_span(spans: Spans, tmp_path: Path) -> None:
    with Memory(tmp_path / "m", embedder="fake", llm=FakeLLM(lambda m: "not json"), enrich_attempts=1) as mem:
        mem.add("The planning meeting covered hiring, the office lease and the roadmap. " * 16, user_id="u")
        assert mem.flush(timeout=30)
    span = spans.one("omnimem.engine.enrich")
    assert span.status.status_code is StatusCode.ERROR and span.status.description == "LLMResponseFormatError"


def test_the_server_continues_the_callers_trace(spans: Spans, tmp_path: Path) -> None:
    backend = Memory(tmp_path / "m", embedder="fake")
    live = LiveServer(backend, auth=False, rate_limit=None, mcp=False)
    try:
        client_span = spans.provider.get_tracer("test-client").start_span("client")
        parent = client_span.get_span_context()
        traceparent = f"00-{parent.trace_id:032x}-{parent.span_id:016x}-01"
        with httpx.Client(base_url=live.url, timeout=30) as http:
            reply = http.post("/v1/units", json={"text": "The tram up the hill is lovely.", "user_id": "u"},
                              headers={"traceparent": traceparent})
            assert reply.status_code in (200, 201), reply.text
        client_span.end()
    finally:  # stopped first: the server span ends after the reply is sent, when the request's task finishes
        live.stop()
        backend.close()
    server = spans.one("POST /v1/units")
    assert server.kind is SpanKind.SERVER and server.parent is not None and server.context is not None
    assert server.parent.trace_id == parent.trace_id and server.parent.span_id == parent.span_id
    assert server.attributes is not None and server.attributes["http.response.status_code"] == reply.status_code
    add = spans.one("omnimem.add")
    assert add.parent is not None and add.parent.span_id == server.context.span_id


def test_the_remote_client_sends_its_trace_context(spans: Spans, tmp_path: Path) -> None:
    with ServedMemory(Memory(tmp_path / "m", embedder="fake"), mcp=False) as remote:
        remote.add("The tram up the hill is lovely.", user_id="u")
        with spans.provider.get_tracer("test-client").start_as_current_span("agent step") as step:
            remote.search("tram", user_id="u")
    server = spans.one("POST /v1/search")
    assert server.parent is not None and server.parent.span_id == step.get_span_context().span_id
    search = spans.one("omnimem.search")
    assert search.parent is not None and server.context is not None and search.parent.span_id == server.context.span_id
    assert search.context is not None and search.context.trace_id == step.get_span_context().trace_id


def test_without_a_tracer_provider_opentelemetry_is_never_imported() -> None:
    code = ("import sys, omnimem; m = omnimem.Memory(embedder='fake'); m.add('hello there', user_id='u');"
            "m.search('hello', user_id='u'); m.close();"
            "print(sorted(n for n in sys.modules if n.startswith('opentelemetry')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=ROOT,
                         env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "HOME": str(Path.home())})
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_without_the_otel_extra_everything_still_runs(monkeypatch: pytest.MonkeyPatch, spans: Spans) -> None:
    monkeypatch.setitem(sys.modules, "opentelemetry.trace", None)  # as if opentelemetry-api were not installed
    with Memory(embedder="fake") as mem:
        mem.add("hello there", user_id="u")
        assert mem.search("hello", user_id="u").hits
    assert spans.finished() == []


def test_a_chosen_provider_is_omnimems_alone_and_can_be_taken_back(spans: Spans) -> None:
    from omnimem import otel

    with Memory(embedder="fake") as mem:
        mem.add("hello there", user_id="u")
        otel.set_tracer_provider(None)  # back to the global provider: none is configured in this process
        assert otel.tracer() is None
        mem.search("hello", user_id="u")
        otel.set_tracer_provider(spans.provider)
    assert [s.name for s in spans.finished()] == ["omnimem.add"]


def test_on_postgresql_the_backend_is_named(spans: Spans, postgres: Any) -> None:
    url = postgres.fresh()
    try:
        with Memory(url=url, embedder="fake") as mem:
            mem.add("The tram up the hill is lovely.", user_id="u")
            mem.search("tram", user_id="u")
    finally:
        postgres.drop(url)
    search = spans.one("omnimem.search")
    assert search.attributes is not None and search.attributes["omnimem.backend"] == "postgresql"
    assert search.attributes["omnimem.hits"] == 1
    assert {s.name for s in spans.finished()} >= {"omnimem.search.dense", "omnimem.search.sparse", "omnimem.search.pack"}
