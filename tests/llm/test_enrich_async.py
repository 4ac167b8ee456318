"""Enrichment off the write path: adds return before any model runs, the enriched version replaces
the unit through supersession once the queue has run, and failures are retried then parked."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Sequence
from pathlib import Path

import pytest
from typer.testing import CliRunner

from omnimem import Memory
from omnimem.cli.commands import app
from omnimem.errors import ConfigError
from omnimem.llm.base import Message
from omnimem.llm.fake import FakeLLM

LONG = "The quarterly planning meeting covered hiring, the new office lease and the product roadmap. " * 12
TURNS = [
    {"id": "D1:1", "speaker": "Caroline", "text": "Hey Mel! How was your weekend?", "time": "2023-05-08T13:56"},
    {"id": "D1:2", "speaker": "Melanie", "text": "I painted a sunset last weekend.", "time": "2023-05-08T13:56"},
    {"id": "D1:3", "speaker": "Caroline", "text": "I went to a support group yesterday.", "time": "2023-05-08T13:56"},
]


class Gated:
    """A model that answers only once the test opens its gate, counting the replies it gave.

    An add that waited for the model would sit until the gate's 30 s wait ran out and a reply
    was counted: "returned with no reply yet" proves nobody waited, whatever the machine's speed.
    """

    def __init__(self) -> None:
        self.gate = threading.Event()
        self.replies = 0

    def __call__(self, messages: Sequence[Message]) -> str:
        self.gate.wait(30)
        self.replies += 1
        return model(messages)


def model(messages: Sequence[Message]) -> str:
    """Answers each kind of request the enrichment makes."""
    system = messages[0]["content"]
    if "summary line" in system:
        return json.dumps({"summary": "Quarterly planning: hiring, office lease, product roadmap."})
    if "NEW memory" in system:
        return json.dumps({"replaces": [1], "reason": "moved"})
    return json.dumps({"units": [
        {"text": "Melanie painted a sunset on the weekend of 29-30 April 2023.", "source_ids": ["D1:2"],
         "time": "2023-04-29"},
        {"text": "Caroline went to a support group on 7 May 2023.", "source_ids": ["D1:3"], "time": "2023-05-07"},
    ]})


def test_add_returns_before_the_model_and_the_summary_lands_as_a_new_version(tmp_path: Path) -> None:
    gated = Gated()
    with Memory(tmp_path / "mem", embedder="fake", llm=FakeLLM(gated)) as mem:
        first = mem.add(LONG, user_id="u", source_id="mail-1")
        assert gated.replies == 0  # the add came back while the model was still held: nobody waited for it
        assert mem.search("quarterly planning", user_id="u").hits[0].unit.id == first.id  # searchable at once
        gated.gate.set()
        assert mem.flush(timeout=30) and mem.stats()["queue"] == {"pending": 0, "running": 0, "failed": 0}
        hits = mem.search("quarterly planning", user_id="u").hits
        enriched = hits[0].unit
        assert enriched.summary == "Quarterly planning: hiring, office lease, product roadmap."
        assert [h.unit.id for h in hits].count(first.id) == 0 and len(hits) == 1  # replaced, not duplicated
        assert enriched.source_ids == ("mail-1",) and enriched.metadata["enriched_from"] == first.id
        assert mem.get(first.id).superseded_by == enriched.id  # history kept
        assert mem.full_text(enriched.id) == mem.full_text(first.id)  # same cold content
        assert [e.action for e in mem.history(enriched.id)] == ["enrich"]
        mem.delete(first.id)  # the id the add returned: the memory goes, enriched version included
        assert mem.stats()["units"] == 0


def test_restatement_runs_in_the_queue_and_supersedes_the_turns(tmp_path: Path) -> None:
    gated = Gated()
    with Memory(tmp_path / "mem", embedder="fake", llm=FakeLLM(gated)) as mem:
        stored = mem.add_dialogue(TURNS, user_id="c1", session_id="s1", restate=True)
        assert gated.replies == 0 and len(stored) == 3  # stored before the model answered
        assert mem.get(stored[1].id).summary == "On 8 May 2023, Melanie said: I painted a sunset last weekend."
        gated.gate.set()
        assert mem.flush(timeout=30)
        hit = mem.search("When did Caroline go to the support group?", user_id="c1").hits[0].unit
        assert hit.summary == "Caroline went to a support group on 7 May 2023." and hit.source_ids == ("D1:3",)
        assert mem.get(stored[2].id).superseded_by == hit.id
        assert mem.get(stored[0].id).active  # a turn the model restated into nothing stays as it was
        current = [h.unit for h in mem.search("sunset support group weekend", user_id="c1", top_k=50).hits]
        assert sorted(s for u in current for s in u.source_ids) == ["D1:1", "D1:2", "D1:3"]  # each turn once
        assert mem.add_dialogue(TURNS, user_id="c1", session_id="s1", restate=True) == []


def test_graph_extraction_is_queued_and_matches_the_synchronous_graph(tmp_path: Path) -> None:
    found = {}
    for mode in ("sync", "async"):
        with Memory(tmp_path / mode, embedder="fake", graph=True, enrich=mode) as mem:
            mem.add_dialogue(TURNS, user_id="u", session_id="s")
            assert mem.flush(timeout=60)
            found[mode] = sorted((e.name, tuple(sorted(e.aliases))) for e in mem.entities(user_id="u"))
    assert found["async"] == found["sync"] and found["sync"]


def test_auto_supersession_is_queued(tmp_path: Path) -> None:
    with Memory(embedder="fake", llm=FakeLLM(model), auto_supersede=True) as mem:
        old = mem.add("Melanie lives in Boston with her kids", user_id="u")
        new = mem.add("Melanie now lives in Seattle with her kids", user_id="u")
        assert mem.get(old.id).active
        assert mem.flush(timeout=30)
        assert mem.get(old.id).superseded_by == new.id


def test_a_failing_model_is_retried_then_parked_with_its_error_and_can_be_retried(tmp_path: Path) -> None:
    path = tmp_path / "mem"
    calls = {"n": 0}

    def broken(messages: Sequence[Message]) -> str:
        calls["n"] += 1
        return "not json at all"

    with Memory(path, embedder="fake", llm=FakeLLM(broken), enrich_attempts=2, enrich_backoff=0.05) as mem:
        result = mem.add(LONG, user_id="u")
        assert mem.flush(timeout=30)  # failed jobs do not hold flush
        assert mem.stats()["queue"] == {"pending": 0, "running": 0, "failed": 1}
        failed = mem.store.jobs("failed")[0]
        assert failed.attempts == 2 and "LLMResponseFormatError" in str(failed.last_error)
        assert mem.get(result.id).active  # the unit is as it was stored: nothing lost
    shown = CliRunner().invoke(app, ["queue", "--store", str(path), "--failed"])
    assert shown.exit_code == 0 and "failed 1" in shown.stdout and f"\n│ {failed.id} " in shown.stdout
    listed = json.loads(CliRunner().invoke(app, ["queue", "--store", str(path), "--json"]).stdout)
    assert listed["depth"]["failed"] == 1 and listed["jobs"][0]["kind"] == "enrich"
    assert listed["jobs"][0]["last_error"].startswith("LLMResponseFormatError")
    again = CliRunner().invoke(app, ["queue", "--store", str(path), "--retry", str(failed.id)])
    assert again.exit_code == 0 and "retried 1" in again.stdout
    with Memory(path, embedder="fake", llm=FakeLLM(model)) as mem:  # pending again: the engine runs it
        assert mem.flush(timeout=30) and mem.stats()["queue"]["failed"] == 0
        assert mem.search("planning", user_id="u").hits[0].unit.metadata["enriched_from"] == result.id
    CliRunner().invoke(app, ["queue", "--store", str(path), "--retry-all"])


def test_dropped_jobs_leave_the_queue(tmp_path: Path) -> None:
    path = tmp_path / "mem"
    with Memory(path, embedder="fake", llm=FakeLLM("nope"), enrich_attempts=1) as mem:
        mem.add(LONG, user_id="u")
        mem.flush(timeout=30)
        job = mem.store.jobs("failed")[0]
    dropped = CliRunner().invoke(app, ["queue", "--store", str(path), "--drop", str(job.id)])
    assert dropped.exit_code == 0 and "dropped 1" in dropped.stdout
    assert "pending 0, running 0, failed 0" in CliRunner().invoke(app, ["queue", "--store", str(path)]).stdout


def test_enrich_off_leaves_jobs_for_a_worker_process(tmp_path: Path) -> None:
    path = tmp_path / "mem"
    with Memory(path, embedder="fake", llm=FakeLLM(model), enrich="off") as mem:
        first = mem.add(LONG, user_id="u")
        time.sleep(0.2)
        assert mem.stats()["queue"]["pending"] == 1  # nobody in this process runs it
        assert mem.flush(timeout=0.1) is False
        assert mem.engine.enricher.run_once() == 1  # what `omnimem worker` does, in the foreground
        assert mem.flush(timeout=1)
        assert mem.get(first.id).superseded_by is not None


def test_sync_and_offline_stores_queue_nothing(tmp_path: Path) -> None:
    with Memory(embedder="fake", llm=FakeLLM(model), enrich="sync") as mem:
        mem.add(LONG, user_id="u")
        assert mem.stats()["queue"] == {"pending": 0, "running": 0, "failed": 0}
        assert mem.search("planning", user_id="u").hits[0].unit.summary.startswith("Quarterly planning")
    with Memory(embedder="fake", llm=False) as mem:  # no model: the offline summary is the final one
        mem.add(LONG, user_id="u")
        mem.add_dialogue(TURNS, user_id="u", restate=True)
        assert mem.store.jobs() == [] and mem.flush(timeout=0)
        assert mem.engine.enricher._threads == []  # no thread was started for nothing
    with pytest.raises(ConfigError):
        Memory(embedder="fake", enrich="later")


def test_worker_command_drains_the_queue(tmp_path: Path) -> None:
    path = tmp_path / "mem"
    with Memory(path, embedder="fake", graph=True, enrich="off") as mem:
        mem.add_dialogue(TURNS, user_id="u", session_id="s")
        assert mem.stats()["queue"]["pending"] == 1 and mem.entities(user_id="u") == []
    none = CliRunner().invoke(app, ["worker", "--store", str(path), "--drain"])
    assert none.exit_code == 2 and "can run no job" in none.output
    ran = CliRunner().invoke(app, ["worker", "--store", str(path), "--drain", "--graph"])
    assert ran.exit_code == 0 and "queue drained" in ran.stdout
    with Memory(path, graph=True, enrich="off") as mem:
        assert "Melanie" in {e.name for e in mem.entities(user_id="u")}


def test_worker_process_runs_jobs_until_sigterm(tmp_path: Path) -> None:
    import os
    import signal
    import subprocess
    import sys

    path = tmp_path / "mem"
    with Memory(path, embedder="fake", graph=True, enrich="off") as mem:
        mem.add_dialogue(TURNS, user_id="u", session_id="s")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2]), "HF_HUB_OFFLINE": "1"}
    worker = subprocess.Popen([sys.executable, "-c", "from omnimem.cli import main; main()", "worker", "--store",
                               str(path), "--graph"], stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert worker.stdout is not None and worker.stdout.readline().startswith("worker on")
        with Memory(path, enrich="off") as mem:
            deadline = time.monotonic() + 60
            while mem.stats()["queue"]["pending"] and time.monotonic() < deadline:
                time.sleep(0.05)
            assert mem.flush(timeout=30)  # the other process ran the job
    finally:
        worker.send_signal(signal.SIGTERM)
        assert worker.wait(timeout=30) == 0  # it finished its job and left
    with Memory(path, graph=True, enrich="off") as mem:
        assert "Melanie" in {e.name for e in mem.entities(user_id="u")}
