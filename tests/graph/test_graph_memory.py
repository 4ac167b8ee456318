"""The knowledge graph through Memory: built on ingest, expanded at query time, forgotten with units."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from omnimem import ConfigError, InvalidInputError, Memory
from omnimem.cli.commands import app

TURNS = [
    {"id": "D1:1", "speaker": "Melanie", "text": "I painted a sunset last weekend with Caroline.", "time": "2023-05-08"},
    {"id": "D1:2", "speaker": "Caroline", "text": "Mel, your sunset painting is beautiful!", "time": "2023-05-08"},
    {"id": "D1:3", "speaker": "Caroline", "text": "I went to an LGBTQ support group in Boston.", "time": "2023-05-08"},
    {"id": "D2:1", "speaker": "Melanie", "text": "Caroline showed me Boston harbour at dawn.", "time": "2023-06-01"},
]


@pytest.fixture
def gmem(tmp_path: Path):
    # the paper's shallow retrieval (one candidate per retriever, set union), so graph-only finds show
    with Memory(tmp_path / "mem", embedder="fake", graph=True, fusion="union", depth=1, neighbours=0) as mem:
        mem.add_dialogue(TURNS[:3], user_id="u1", session_id="s1")
        mem.add_dialogue(TURNS[3:], user_id="u1", session_id="s2")
        assert mem.flush(timeout=60)  # graph extraction is queued enrichment
        yield mem


def test_entities_resolve_aliases_across_sessions(gmem: Memory):
    people = {e.name: e for e in gmem.entities(user_id="u1") if e.type.value == "Person"}
    assert set(people) == {"Melanie", "Caroline"}
    assert "Mel" in people["Melanie"].aliases and "Mel" in str(people["Melanie"])
    names = {e.name for e in gmem.entities(user_id="u1")}
    assert "Boston" in names  # one node although two sessions mention it
    assert {e.name for e in gmem.entities(user_id="u1", session_id="s2")} >= {"Caroline", "Boston"}


def test_neighbors_are_scored_by_distance(gmem: Memory):
    reached = {n.entity.name: n for n in gmem.neighbors("Mel", hops=2, user_id="u1")}
    assert reached["Melanie"].distance == 0 and reached["Melanie"].score == 1.0
    assert reached["sunset"].distance == 1 and 0 < reached["sunset"].score <= 0.5  # beta^1 * edge confidence
    two_hops = [n for n in reached.values() if n.distance == 2]
    assert two_hops and all(n.score <= 0.25 for n in two_hops)
    assert gmem.neighbors("Nobody", user_id="u1") == []


def test_graph_evidence_reaches_the_context(gmem: Memory):
    ctx = gmem.search("Where has Caroline been?", user_id="u1")
    assert ctx.graph is not None and ctx.graph["seeds"]
    graph_hits = [h for h in ctx.hits if "graph" in h.sources]
    assert graph_hits, ctx.to_dict()
    assert any("Boston" in h.unit.summary for h in graph_hits)
    assert any(h.sources == {"graph"} for h in ctx.hits)  # at least one unit only the graph found


def test_the_graph_inside_the_fusion_ranks_its_units_with_the_others(tmp_path: Path):
    filler = [{"speaker": "Melanie", "text": f"The weather on day {n} was grey and quiet.", "time": "2023-05-09"}
              for n in range(30)]
    # ranking="rules": the fused score orders (the learnt ranking re-orders the head by its own score)
    with Memory(tmp_path / "m", embedder="fake", graph=True, graph_weight=1.0, top_k=8, ranking="rules") as mem:
        mem.add_dialogue(TURNS[:3] + filler, user_id="u1", session_id="s1")
        mem.add_dialogue(TURNS[3:], user_id="u1", session_id="s2")
        mem.add_dialogue([{"speaker": "Caroline", "text": "I went to Boston too."}], user_id="u2", session_id="x")
        assert mem.flush(timeout=60)
        ctx = mem.search("Where has Caroline been?", user_id="u1")
        assert ctx.graph is not None and ctx.graph["seeds"] and ctx.graph["added"] == []  # fused, not appended
        by_rank = sorted(ctx.hits, key=lambda h: h.rank)
        assert len(by_rank) <= 8 and all(h.unit.user_id == "u1" for h in by_rank)
        reached = [h for h in by_rank if "graph" in h.sources]
        assert reached and all("graph" in h.ranks for h in reached)
        assert any("Boston" in h.unit.summary for h in reached)
        fused = [h.fused for h in by_rank]
        assert fused == sorted(fused, reverse=True)  # the graph's list is inside the fused score
    with Memory(tmp_path / "m", embedder="fake", graph=True, top_k=8) as mem:  # graph_weight=0: appended
        ctx = mem.search("Where has Caroline been?", user_id="u1")
        assert ctx.graph is not None and ctx.graph["added"] and all("graph" not in h.ranks for h in ctx.hits)


def test_graph_weight_is_checked():
    with pytest.raises(ConfigError, match="graph_weight"):
        Memory(embedder="fake", graph=True, graph_weight=-1)


def test_forget_removes_entities_left_without_evidence(gmem: Memory):
    gmem.forget(user_id="u1", session_id="s1")
    names = {e.name for e in gmem.entities(user_id="u1")}
    assert "sunset" not in names and "LGBTQ support group" not in names
    assert {"Caroline", "Boston", "Melanie"} <= names  # still attested by session s2
    gmem.forget(user_id="u1")
    assert gmem.entities(user_id="u1") == []


def test_graph_is_isolated_between_users(tmp_path: Path):
    with Memory(tmp_path / "m", embedder="fake", graph=True) as mem:
        mem.add("Alice met Bob in Paris.", user_id="a")
        mem.add("Alice adopted a cat named Tom.", user_id="b")
        mem.flush()
        a_names = {e.name for e in mem.entities(user_id="a")}
        assert "Paris" in a_names and "Tom" not in a_names
        assert all(n.entity.scope.user_id == "b" for n in mem.neighbors("Alice", user_id="b"))
        hits = mem.search("Where did Alice meet Bob?", user_id="b").hits
        assert all(h.unit.user_id == "b" for h in hits)


def test_graph_off_is_a_clear_error(mem: Memory):
    with pytest.raises(ConfigError, match="graph=True"):
        mem.entities()


def test_cli_graph_show_and_export(gmem: Memory, monkeypatch):
    path = str(gmem.path)
    gmem.close()
    runner = CliRunner()
    shown = runner.invoke(app, ["graph", "show", "Mel", "--store", path])
    assert shown.exit_code == 0, shown.output
    assert "Melanie" in shown.stdout and "aka Mel" in shown.stdout and "units:" in shown.stdout
    exported = json.loads(runner.invoke(app, ["graph", "export", "--format", "json", "--store", path]).stdout)
    assert {n["name"] for n in exported["nodes"]} >= {"Melanie", "Caroline", "Boston"} and exported["edges"]
    graphml = runner.invoke(app, ["graph", "export", "--format", "graphml", "--store", path])
    assert graphml.exit_code == 0 and "<graphml" in graphml.stdout
    import networkx as nx

    parsed = nx.parse_graphml(graphml.stdout)
    assert any(d.get("name") == "Melanie" for _, d in parsed.nodes(data=True))
    missing = runner.invoke(app, ["graph", "show", "Nobody", "--store", path])
    assert missing.exit_code != 0 and missing.stderr.startswith("error: ")


def test_entity_details_and_export_graph_are_public(gmem: Memory):
    found = gmem.entity_details("Mel", user_id="u1")
    assert [d["name"] for d in found] == ["Melanie"] and found[0]["units"]
    assert gmem.entity_details("Nobody") == []
    assert "Melanie" in gmem.export_graph(format="graphml")
    assert {n["name"] for n in json.loads(gmem.export_graph(user_id="u1"))["nodes"]} >= {"Melanie", "Caroline"}
    with pytest.raises(InvalidInputError, match="graphml"):
        gmem.export_graph(format="dot")
