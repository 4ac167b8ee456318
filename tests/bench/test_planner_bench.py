"""The benchmark harness measures planners: ``--planner`` twins, ``key=value`` variants, the cost command."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import typer

from benchmarks.harness.retrieval import MemorySystem
from benchmarks.retrieval import planner_cost
from benchmarks.retrieval.commands import choose_systems


def test_planner_twins_search_the_same_store_with_planner_set() -> None:
    systems = choose_systems("naive-dense,omnimem", "offline,llm")
    names = [s.name for s in systems]
    assert names == ["naive-dense", "omnimem", "omnimem+offline", "omnimem+llm"]
    twin = systems[2]
    assert isinstance(twin, MemorySystem) and twin.settings == {} and twin.search == {"planner": "offline"}
    with pytest.raises(typer.BadParameter, match="unknown planner"):
        choose_systems("omnimem", "clever")


def test_a_key_value_variant_is_the_defaults_with_those_settings() -> None:
    (system,) = choose_systems("dense_without_names=false+plan_rounds=2")
    assert isinstance(system, MemorySystem)
    assert system.settings == {"dense_without_names": "false", "plan_rounds": "2"}


def test_planner_cost_reports_calls_tokens_and_latency(tmp_path: Path) -> None:
    planner_cost.main(["--size", "200", "--queries", "3", "--repeats", "1", "--latency", "0.01", "--out",
                       str(tmp_path)])
    result = json.loads((tmp_path / "planner-cost.json").read_text())
    llm = result["planners"]["llm"]
    assert llm["calls_per_search"] == 2.0 and llm["rounds_per_search"] == 2.0  # analysis, check, one more round
    assert llm["prompt_tokens_per_search"] > 0 and llm["completion_tokens_per_search"] > 0
    assert result["planners"]["offline"]["p50_ratio"] > 0
    assert "--latency 0.01" in result["command"]
