"""``top_k`` bounds the hits on every surface: the library, HTTP and the CLI here, MCP in tests/mcp.

It means "at most this many memories: the best of the fused ranking, those that
fit the budget"; left out, a search returns as many as the budget holds.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.serving import ServedMemory

from omnimem import Memory
from omnimem.cli import app

SAMPLE = Path(__file__).resolve().parents[3] / "examples" / "sample_conversation.jsonl"
TURNS = [{"speaker": "Ann", "text": f"note {i}: we talked about the lighthouse and the harbour", "time": "2024-05-01"}
         for i in range(12)]


@pytest.fixture
def mem(tmp_path: Path):
    with Memory(tmp_path / "mem", embedder="fake", novelty=False) as m:
        m.add_dialogue(TURNS, user_id="u", session_id="s")
        yield m


def test_library_top_k_is_an_upper_bound_and_keeps_the_best(mem: Memory):
    every = mem.search("lighthouse harbour", user_id="u")
    assert len(every.hits) == 12  # no bound: as many as the budget holds
    for k in (1, 3, 5):
        ctx = mem.search("lighthouse harbour", user_id="u", top_k=k)
        assert len(ctx.hits) == k
        assert [h.unit.id for h in ctx.hits] == [h.unit.id for h in sorted(every.hits, key=lambda h: h.rank)[:k]]
    assert len(mem.search("lighthouse harbour", user_id="u", top_k=3, budget=30).hits) <= 3  # budget still rules


def test_the_top_k_setting_is_the_default_bound(tmp_path: Path):
    with Memory(tmp_path / "m", embedder="fake", novelty=False, top_k=2) as m:
        m.add_dialogue(TURNS, user_id="u", session_id="s")
        assert len(m.search("lighthouse", user_id="u").hits) == 2
        assert len(m.search("lighthouse", user_id="u", top_k=4).hits) == 4


def test_http_top_k_bounds_the_hits(tmp_path: Path):
    backend = Memory(tmp_path / "served", embedder="fake", novelty=False)
    with ServedMemory(backend) as remote:
        remote.add_dialogue(TURNS, user_id="u", session_id="s")
        assert len(remote.search("lighthouse harbour", user_id="u", top_k=1).hits) == 1
        assert len(remote.search("lighthouse harbour", user_id="u").hits) == 12


def test_cli_top_k_bounds_the_hits(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("OMNIMEM_EMBEDDER", "fake")
    runner = CliRunner()
    store = tmp_path / "store"
    assert runner.invoke(app, ["ingest", "jsonl", str(SAMPLE), "--store", str(store)]).exit_code == 0
    res = runner.invoke(app, ["search", "painting", "--store", str(store), "--top-k", "1", "--json"])
    assert res.exit_code == 0, res.output
    assert len(json.loads(res.stdout)["hits"]) == 1
    helped = runner.invoke(app, ["search", "--help"], env={"COLUMNS": "200"})
    assert "At most this many memories" in " ".join(helped.output.split())
