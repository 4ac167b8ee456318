"""Memory.ask through the real openai client and HTTP, offline behaviour, parallel queries."""

from __future__ import annotations

import threading

import pytest
from fake_openai import chat, error

from omnimem import Memory
from omnimem.engine.retrieval.answer import NO_MODEL_NOTE
from omnimem.llm import FakeLLM, LLMUnavailableError

TURNS = [
    {"speaker": "Melanie", "text": "I painted a sunset with a palm tree last weekend.", "time": "2023-07-15T10:00", "id": "D1:1"},
    {"speaker": "Caroline", "text": "I went to the LGBTQ support group yesterday.", "time": "2023-05-08T13:56", "id": "D1:2"},
]


def test_ask_over_http_sends_the_pyramid_context_and_reports_usage(server, make_llm):
    server.push(chat("A sunset with a palm tree.", prompt_tokens=120, completion_tokens=7))
    with Memory(embedder="fake", llm=make_llm()) as mem:
        mem.add_dialogue(TURNS, user_id="c1")
        answer = mem.ask("What did Melanie paint?", user_id="c1")
    assert answer.answer == "A sunset with a palm tree."
    assert answer.usage.prompt_tokens == 120 and answer.usage.completion_tokens == 7 and answer.usage.calls == 1
    assert answer.model == "test-model"
    assert {s for h in answer.evidence for s in h.unit.source_ids} == {"D1:1", "D1:2"}
    sent = server.requests[0]["messages"]
    assert "[2023-07-15 10:00]\nMelanie: I painted a sunset" in sent[-1]["content"]
    assert "What did Melanie paint?" in sent[-1]["content"]
    assert "2023" not in sent[0]["content"]  # no data-set assumptions in the library prompt


def test_custom_instructions_replace_the_system_prompt(server, make_llm):
    server.push(chat("No information available."))
    with Memory(embedder="fake", llm=make_llm()) as mem:
        mem.add_dialogue(TURNS, user_id="c1")
        mem.ask("Who won the lottery?", instructions="Reply 'No information available.' when unsure.")
    assert server.requests[0]["messages"][0]["content"] == "Reply 'No information available.' when unsure."


def test_unreachable_model_is_a_typed_error_and_memory_survives(closed_port_url, make_llm):
    with Memory(embedder="fake", llm=make_llm(base_url=closed_port_url)) as mem:
        mem.add_dialogue(TURNS, user_id="c1")
        with pytest.raises(LLMUnavailableError):
            mem.ask("What did Melanie paint?")
        assert mem.stats()["units"] == 2
        assert mem.stats()["llm"]["failures"] == 1


def test_server_error_after_retries(server, make_llm):
    server.default = error(500, "boom")
    with Memory(embedder="fake", llm=make_llm()) as mem:
        mem.add("something", user_id="u")
        with pytest.raises(LLMUnavailableError):
            mem.ask("anything?")


def test_offline_ask_returns_evidence_and_says_why_there_is_no_answer():
    with Memory(embedder="fake") as mem:
        assert mem.llm is None
        mem.add_dialogue(TURNS, user_id="c1")
        answer = mem.ask("What did Melanie paint?")
    assert answer.answer is None and answer.note == NO_MODEL_NOTE
    assert answer.evidence and answer.evidence[0].unit.source_ids == ("D1:1",)
    assert answer.usage.calls == 0


def test_llm_comes_from_the_environment(server, monkeypatch):
    monkeypatch.setenv("OMNIMEM_LLM_BASE_URL", server.url)
    monkeypatch.setenv("OMNIMEM_LLM_MODEL", "env-model")
    server.push(chat("from env"))
    with Memory(embedder="fake") as mem:
        mem.add("hello there", user_id="u")
        assert mem.ask("hello?").answer == "from env"
    assert server.requests[0]["model"] == "env-model"
    with Memory(embedder="fake", llm=False) as mem:  # explicitly offline wins over the environment
        assert mem.llm is None


def test_ask_many_runs_in_parallel_and_keeps_order():
    together = threading.Barrier(8, timeout=30)  # each call waits until all 8 are in the model at once

    def answer(msgs):
        together.wait()  # run one after the other, the first call would break the barrier: an error
        return msgs[-1]["content"].split("Question: ")[1].split("\n")[0].upper()

    with Memory(embedder="fake", llm=FakeLLM(answer)) as mem:
        mem.add_dialogue(TURNS, user_id="c1")
        questions = [f"question {i}" for i in range(8)]
        answers = mem.ask_many(questions, workers=8)
    assert [a.answer for a in answers] == [q.upper() for q in questions]


def test_concurrent_readers_while_a_writer_adds(tmp_path):
    errors: list[BaseException] = []
    with Memory(tmp_path / "mem", embedder="fake") as mem:
        mem.add("seed memory about sailing boats", user_id="u")
        stop = threading.Event()

        def writer() -> None:
            try:
                for i in range(200):
                    mem.add(f"note {i} about sailing boat number {i}", user_id="u", time=f"2024-01-01T00:{i % 60:02d}")
            except BaseException as exc:  # surfaced below
                errors.append(exc)
            finally:
                stop.set()

        def reader() -> None:
            try:
                while not stop.is_set():
                    for ctx in mem.search_many(["sailing boats", "boat number"], workers=2, user_id="u"):
                        assert all(h.unit.user_id == "u" for h in ctx.hits)
                        assert ctx.tokens <= ctx.budget
            except BaseException as exc:
                errors.append(exc)

        threads = [threading.Thread(target=writer), *(threading.Thread(target=reader) for _ in range(3))]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
        assert not errors, errors
        assert mem.stats()["units"] == 201
        assert mem.indexes.sizes()["dense"] == 201


def test_cli_ask_offline_and_with_a_model(server, tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from omnimem.cli.commands import app

    monkeypatch.setenv("OMNIMEM_EMBEDDER", "fake")
    store = str(tmp_path / "mem")
    runner = CliRunner()
    runner.invoke(app, ["add", "I painted a sunset with a palm tree", "--speaker", "Mel", "--store", store])
    offline = runner.invoke(app, ["ask", "What did Mel paint?", "--store", store])
    assert offline.exit_code == 0 and "no language model is configured" in offline.stderr
    assert "palm tree" in offline.stdout
    monkeypatch.setenv("OMNIMEM_LLM_BASE_URL", server.url)
    monkeypatch.setenv("OMNIMEM_LLM_MODEL", "m")
    monkeypatch.setenv("OMNIMEM_LLM_MAX_RETRIES", "0")
    server.push(chat("A sunset."))
    online = runner.invoke(app, ["ask", "What did Mel paint?", "--store", store, "--json"])
    assert online.exit_code == 0, online.output
    import json

    assert json.loads(online.stdout)["answer"] == "A sunset."


def test_long_text_gets_a_model_summary_and_keeps_its_full_text(tmp_path):
    import json as _json

    long = "The quarterly planning meeting covered hiring, the new office lease and the product roadmap. " * 12
    llm = FakeLLM(_json.dumps({"summary": "Quarterly planning: hiring, office lease, product roadmap."}))
    with Memory(tmp_path / "mem", embedder="fake", llm=llm, enrich="sync") as mem:
        uid = mem.add(long, user_id="u").id
        unit = mem.get(uid)
        assert unit.summary == "Quarterly planning: hiring, office lease, product roadmap."
        ctx = mem.search("quarterly planning hiring office lease roadmap", user_id="u", theta=0.0)
        assert ctx.hits[0].level == 2 and long.strip() in ctx.render()
        short = mem.add("a short note", user_id="u").id
        assert mem.get(short).summary == "a short note" and len(llm.prompts) == 1  # short text: no model call
    with Memory(embedder="fake", llm=FakeLLM("unused"), llm_summaries=False) as mem:
        assert mem.get(mem.add(long, user_id="u").id).summary.endswith("…")
