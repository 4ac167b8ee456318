"""Retrieval planning behind one setting: ``planner=None`` (one search), ``"offline"``, ``"llm"``.

The offline planner needs no model: it rewrites a question that asks for many things at once
into its content words, and takes a second hop from the first round's best hits; every round's
queries and reasons are in ``Context.plan``, on every surface.
"""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from tests.serving import ServedMemory

from omnimem import Memory
from omnimem.cli import app
from omnimem.engine.retrieval.plan_offline import aggregation_cue, hop_words
from omnimem.errors import ConfigError, InvalidInputError
from omnimem.results import Context

TURNS = [
    {"speaker": "Ann", "text": "My daughter Lily started piano lessons this spring.", "time": "2024-05-01T10:00"},
    {"speaker": "Bob", "text": "The seed packets arrived for the garden.", "time": "2024-05-01T10:01"},
    {"speaker": "Ann", "text": "Lily adores painting sunflowers and horses.", "time": "2024-05-09T10:00"},
    {"speaker": "Bob", "text": "I went hiking and camping last weekend.", "time": "2024-05-10T10:01"},
    {"speaker": "Bob", "text": "Fishing at the lake is my other weekend thing.", "time": "2024-05-20T10:01"},
]
QUESTION = "What are Bob's hobbies?"


def test_no_planner_is_one_search_and_no_plan() -> None:
    with Memory(embedder="fake", novelty=False) as mem:
        mem.add_dialogue(TURNS, user_id="u")
        plain = mem.search(QUESTION, user_id="u")
        assert plain.plan is None
        assert mem.search(QUESTION, user_id="u", planner="none") == plain


def test_the_offline_planner_rewrites_hops_and_reports_its_rounds() -> None:
    with Memory(embedder="fake", novelty=False) as mem:
        mem.add_dialogue(TURNS, user_id="u")
        ctx = mem.search(QUESTION, user_id="u", planner="offline")
    plan = ctx.plan
    assert plan is not None and plan.planner == "offline"
    first, hop = plan.rounds
    assert first.queries == (QUESTION, "Bob hobbies")  # the plural noun asks for many things
    assert "aggregation cue 'hobbies'" in first.reason
    assert hop.queries[0].startswith("Bob hobbies ") and "second hop" in hop.reason
    assert "bob" not in hop.queries[0].split()[2:]  # a speaker's name is no hop word
    assert (plan.calls, plan.prompt_tokens, plan.completion_tokens) == (0, 0, 0)  # no model
    assert {"search1", "hop", "search2", "pack"} <= set(plan.ms)
    assert ctx.tokens <= ctx.budget
    assert Context.from_dict(ctx.to_dict()) == ctx  # the plan crosses surfaces whole


def test_plan_rounds_zero_takes_no_hop_and_the_setting_is_the_default() -> None:
    with Memory(embedder="fake", novelty=False, planner="offline", plan_rounds=0) as mem:
        mem.add_dialogue(TURNS, user_id="u")
        ctx = mem.search("Where is the lake?", user_id="u")
        assert ctx.plan is not None and [r.queries for r in ctx.plan.rounds] == [("Where is the lake?",)]
        assert mem.search("Where is the lake?", user_id="u", planner="none").plan is None  # per search wins


def test_hop_words_prefer_names_and_skip_the_question_and_speakers() -> None:
    words = hop_words("What does Ann's daughter like?", ["My daughter Lily plays piano", "Lily loves piano"], {"Ann"})
    assert words[:2] == ["lily", "piano"]
    assert "daughter" not in words and "ann" not in words
    assert aggregation_cue("How many times did we meet?") == "how many"
    assert aggregation_cue("Where is the lake?") is None


def test_bad_planner_values_are_typed_errors(tmp_path: Path) -> None:
    with Memory(embedder="fake") as mem:
        with pytest.raises(InvalidInputError, match="planner must be none, offline or llm"):
            mem.search("x", planner="clever")
        with pytest.raises(ConfigError, match="needs a model"):
            mem.search("x", planner="llm")  # no model configured: no silent fallback
    with pytest.raises(ConfigError, match="planner must be one of"):
        Memory(embedder="fake", planner="clever")
    with pytest.raises(ConfigError, match="plan_rounds"):
        Memory(embedder="fake", plan_rounds=-1)


def test_the_planner_setting_takes_none_as_the_docs_spell_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """``OMNIMEM_PLANNER=none`` (the spelling of the docs, the CLI and the error) is no planner, not an error."""
    monkeypatch.setenv("OMNIMEM_PLANNER", "none")
    with Memory(embedder="fake") as mem:
        assert mem.settings.planner is None and mem.search("x").plan is None
    with Memory(embedder="fake", planner="none") as mem:
        assert mem.settings.planner is None
    monkeypatch.setenv("OMNIMEM_PLANNER", "offline")
    with Memory(embedder="fake") as mem:
        assert mem.settings.planner == "offline"


def test_http_takes_planner_and_returns_the_plan(tmp_path: Path) -> None:
    with ServedMemory(Memory(tmp_path / "m", embedder="fake", novelty=False)) as mem:
        mem.add_dialogue(TURNS, user_id="u")
        ctx = mem.search(QUESTION, user_id="u", planner="offline")  # the remote engine, over HTTP
        assert ctx.plan is not None and ctx.plan.rounds[0].queries == (QUESTION, "Bob hobbies")
        bad = httpx.post(f"{mem.live.url}/v1/search", json={"query": "x", "planner": "clever"})
        assert bad.status_code == 400 and "planner must be" in bad.text
        no_model = httpx.post(f"{mem.live.url}/v1/search", json={"query": "x", "planner": "llm"})
        assert no_model.status_code == 400 and "needs a model" in no_model.text


def test_cli_search_planner_shows_the_plan_in_json(tmp_path: Path) -> None:
    store = tmp_path / "m"
    with Memory(store, embedder="fake", novelty=False) as mem:
        mem.add_dialogue(TURNS, user_id="u")
    res = CliRunner().invoke(app, ["search", QUESTION, "--store", str(store), "--user-id", "u", "--planner",
                                   "offline", "--json"])
    assert res.exit_code == 0, res.output
    plan = json.loads(res.output)["plan"]
    assert plan["planner"] == "offline" and plan["rounds"][0]["queries"] == [QUESTION, "Bob hobbies"]
    bad = CliRunner().invoke(app, ["search", "x", "--store", str(store), "--planner", "clever"])
    assert bad.exit_code != 0 and "planner must be none, offline or llm" in bad.output
