"""The queue survives a worker killed with SIGKILL at the points that matter: after claiming the job
(the model still thinking), after the model answered, and after the result was written. After a
restart there is exactly one enriched version, no duplicate unit or graph row, and the job completes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from fake_openai import FakeOpenAIServer, Reply, chat

from omnimem import Memory, Scope

CHILD = Path(__file__).with_name("enrich_child.py")
LONG = "Melanie painted a sunset over Boston harbour with her kids in the summer. " * 30
TURNS = [
    {"id": "D1:1", "speaker": "Caroline", "text": "Hey Mel! How was your weekend?", "time": "2023-05-08T13:56"},
    {"id": "D1:2", "speaker": "Melanie", "text": "I painted a sunset last weekend.", "time": "2023-05-08T13:56"},
    {"id": "D1:3", "speaker": "Caroline", "text": "I went to a support group in Boston yesterday.",
     "time": "2023-05-08T13:56"},
]


def answer(body: dict[str, Any], delay: float) -> Reply:
    system = body["messages"][0]["content"]
    if "summary line" in system:
        return chat(json.dumps({"summary": "Melanie painted a sunset over Boston harbour with her kids."}),
                    delay=delay)
    return chat(json.dumps({"units": [
        {"text": "Melanie painted a sunset on the weekend of 29-30 April 2023.", "source_ids": ["D1:2"]},
        {"text": "Caroline went to a support group in Boston on 7 May 2023.", "source_ids": ["D1:3"]},
    ]}), delay=delay)


def kill_at(point: str, store: Path, server: FakeOpenAIServer) -> None:
    """Run the child worker and SIGKILL it at ``point``."""
    server.responder = lambda body: answer(body, 60.0 if point == "claimed" else 0.0)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).parents[2]), str(CHILD.parent)]),
           "HF_HUB_OFFLINE": "1"}
    child = subprocess.Popen([sys.executable, str(CHILD), str(store), server.url, point], stdout=subprocess.PIPE,
                             text=True, env=env)
    try:
        deadline = time.monotonic() + 120
        assert child.stdout is not None
        wanted = "CLAIMING" if point == "claimed" else f"AT {point}"
        line = ""
        while line.strip() != wanted:
            line = child.stdout.readline()
            if not line and child.poll() is not None:
                pytest.fail(f"worker exited early with {child.returncode}")
            assert not line.startswith("AT ") or line.strip() == wanted, line
        while point == "claimed" and not server.requests:  # claimed, and its model call in flight
            assert time.monotonic() < deadline and child.poll() is None, "the worker never called the model"
            time.sleep(0.01)
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    assert child.returncode == -signal.SIGKILL


def restart(store: Path, make_llm: Any) -> Memory:
    """Reopen the store with a worker of this process, once the dead worker's lease (1 s) has passed."""
    time.sleep(1.1)
    return Memory(store, llm=make_llm(), graph=True, graph_extractor="spacy", enrich_lease=1.0)


def graph_rows(mem: Memory) -> tuple[list[str], list[tuple[str, str]]]:
    names = sorted(e.name for e in mem.entities(user_id="u"))
    with mem.store.graph_rows() as rows:
        links = rows.unit_links()
    return names, links


@pytest.mark.parametrize("point", ["claimed", "answered", "written"])
def test_a_killed_summary_job_lands_once(point: str, tmp_path: Path, server: FakeOpenAIServer, make_llm: Any) -> None:
    store = tmp_path / "mem"
    with Memory(store, embedder="fake", llm=make_llm(), graph=True, graph_extractor="spacy", enrich="off") as mem:
        first = mem.add(LONG, user_id="u", source_id="note-7")
    kill_at(point, store, server)
    server.responder = lambda body: answer(body, 0.0)
    with restart(store, make_llm) as mem:
        assert mem.flush(timeout=60)
        assert mem.stats()["queue"] == {"pending": 0, "running": 0, "failed": 0}
        ids = mem.store.ids_in_scope(Scope("u"))
        assert len(ids) == 2  # the unit and exactly one enriched version
        original = mem.get(first.id)
        version = mem.get(original.superseded_by or "")
        assert version.metadata["enriched_from"] == first.id and version.source_ids == ("note-7",)
        assert version.summary == "Melanie painted a sunset over Boston harbour with her kids."
        names, links = graph_rows(mem)
        assert "Melanie" in names and len(names) == len(set(names))  # no entity twice
        assert len(links) == len(set(links)) and {u for _, u in links} == {version.id}
        assert [h.unit.id for h in mem.search("sunset Boston harbour", user_id="u").hits] == [version.id]


@pytest.mark.parametrize("point", ["claimed", "answered", "written"])
def test_a_killed_restatement_job_lands_once(point: str, tmp_path: Path, server: FakeOpenAIServer,
                                             make_llm: Any) -> None:
    store = tmp_path / "mem"
    with Memory(store, embedder="fake", llm=make_llm(), graph=True, graph_extractor="spacy", enrich="off") as mem:
        turns = mem.add_dialogue(TURNS, user_id="u", session_id="s", restate=True)
        assert [j.kind for j in mem.store.jobs()] == ["restate"]
    kill_at(point, store, server)
    server.responder = lambda body: answer(body, 0.0)
    with restart(store, make_llm) as mem:
        assert mem.flush(timeout=60)
        assert mem.stats()["queue"] == {"pending": 0, "running": 0, "failed": 0}
        units = mem.store.get(mem.store.ids_in_scope(Scope("u")))
        restated = [u for u in units if u.metadata.get("restated") is True]
        assert sorted(u.source_ids for u in restated) == [("D1:2",), ("D1:3",)]  # one each, no duplicate
        assert len(units) == 5
        current = sorted(s for u in units if u.active for s in u.source_ids)
        assert current == ["D1:1", "D1:2", "D1:3"]  # every turn once among current units
        assert {mem.get(t.id).superseded_by for t in turns[1:]} == {u.id for u in restated}
        names, links = graph_rows(mem)
        assert len(names) == len(set(names)) and len(links) == len(set(links))
        assert {u for _, u in links} <= {u.id for u in units if u.active}
