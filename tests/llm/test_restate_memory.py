"""Restatement through Memory: stored units, provenance, resume after a failure, offline."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from fake_openai import Reply, chat, error

from omnimem import Memory, Scope
from omnimem.llm import LLMUnavailableError

TURNS = [
    {"id": "D1:1", "speaker": "Caroline", "text": "Hey Mel! How was your weekend?", "time": "2023-05-08T13:56"},
    {"id": "D1:2", "speaker": "Melanie", "text": "I painted a sunset last weekend.", "time": "2023-05-08T13:56"},
    {"id": "D1:3", "speaker": "Caroline", "text": "I went to a support group yesterday.", "time": "2023-05-08T13:56"},
]


def units(*items: tuple[str, list[str], str | None]) -> Reply:
    return chat(json.dumps({"units": [{"text": t, "source_ids": ids, "time": when} for t, ids, when in items]}))


def test_restated_units_resolve_pronouns_and_dates_and_keep_provenance(server, make_llm):
    server.push(units(
        ("Melanie painted a sunset on the weekend of 29-30 April 2023.", ["D1:2"], "2023-04-29"),
        ("Caroline went to a support group on 7 May 2023.", ["D1:3"], "2023-05-07"),
    ))
    with Memory(embedder="fake", llm=make_llm(), enrich="sync") as mem:
        results = mem.add_dialogue(TURNS, user_id="c1", session_id="s1", restate=True)
        assert [r.accepted for r in results] == [True, True]
        stored = [mem.get(r.id) for r in results]
        assert stored[1].summary == "Caroline went to a support group on 7 May 2023."
        assert stored[1].source_ids == ("D1:3",) and stored[1].event_time.date().isoformat() == "2023-05-07"
        assert stored[0].speaker == "Melanie" and stored[0].metadata["restated"] is True
        hit = mem.search("When did Caroline go to the support group?", user_id="c1").hits[0]
        assert hit.unit.source_ids == ("D1:3",)
    prompt = server.requests[0]["messages"][-1]["content"]
    assert "[D1:2] Melanie: I painted a sunset last weekend." in prompt and "2023-05-08" in prompt


def stored_sources(mem: Memory) -> list[str]:
    """Source turn ids of every stored unit, in storage order (duplicates kept)."""
    return [s for uid in mem.store.ids_in_scope(Scope("u", None, "s")) for s in mem.get(uid).source_ids]


def test_failure_mid_way_keeps_stored_windows_and_resumes_without_duplicates(server, make_llm, tmp_path):
    turns = [{"id": f"t{i}", "speaker": "Ann" if i % 2 else "Bob", "text": f"message number {i}",
              "time": "2024-01-01T10:00"} for i in range(10)]
    fail = {"on": True}

    def respond(body: dict[str, Any]) -> Reply:
        prompt = next(m["content"] for m in body["messages"] if m["role"] == "user")
        new = re.findall(r"^\[(t\d+)\]", prompt.split("New turns:")[-1], flags=re.MULTILINE)
        if fail["on"] and "t8" in new:
            return error(503, "overloaded")
        return units(*((f"Statement about {i}.", [i], None) for i in new))

    server.responder = respond
    with Memory(tmp_path / "mem", embedder="fake", llm=make_llm(max_retries=0), restate_window=4, enrich="sync",
                restate_overlap=1, llm_workers=1) as mem:
        with pytest.raises(LLMUnavailableError):
            mem.add_dialogue(turns, user_id="u", session_id="s", restate=True)
        before = stored_sources(mem)
        assert before and "t9" not in before
        fail["on"] = False
        mem.add_dialogue(turns, user_id="u", session_id="s", restate=True)
        assert stored_sources(mem) == [f"t{i}" for i in range(10)]  # every turn once: nothing lost, nothing twice
        assert mem.add_dialogue(turns, user_id="u", session_id="s", restate=True) == []


def test_offline_restatement_makes_speaker_and_date_explicit():
    with Memory(embedder="fake") as mem:
        results = mem.add_dialogue(TURNS, user_id="c1", restate=True)
        texts = [mem.get(r.id).summary for r in results]
    assert texts[1] == "On 8 May 2023, Melanie said: I painted a sunset last weekend."
    assert len(texts) == 3
