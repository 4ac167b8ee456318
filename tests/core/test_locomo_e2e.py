"""End to end on a real LoCoMo conversation with the real all-MiniLM-L6-v2."""

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from omnimem import Memory
from omnimem.cli.commands import app
from omnimem.embed import MiniLMEmbedder
from omnimem.contract.loaders import load_locomo

pytestmark = pytest.mark.slow

# (question, evidence dia_id, speaker of that turn): single-hop questions of conv-26
KNOWN = [
    ("When did Caroline go to the LGBTQ support group?", "D1:3", "Caroline"),
    ("What did the charity race raise awareness for?", "D2:2", "Caroline"),
    ("What did Mel and her kids make during the pottery workshop?", "D8:2", "Melanie"),
    ("What did Mel and her kids paint in their latest project in July 2023?", "D8:6", "Melanie"),
    ("How did Melanie feel while watching the meteor shower?", "D10:18", "Melanie"),
]


@pytest.fixture(scope="module")
def conv26(data_dir: Path, minilm: MiniLMEmbedder, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Memory]:
    path = tmp_path_factory.mktemp("conv26") / "mem"
    with Memory(path, embedder=minilm) as mem:
        for d in load_locomo(data_dir / "locomo" / "locomo10.json", conversation="conv-26"):
            mem.add_dialogue(d.turns, user_id=d.user_id, session_id=d.session_id)
        yield mem


def test_whole_conversation_is_stored(conv26: Memory):
    stats = conv26.stats()
    assert stats["embedder"] == "all-MiniLM-L6-v2" and stats["dim"] == 384
    assert stats["sessions"] == 19
    assert 400 <= stats["units"] <= 419  # the novelty filter may drop a few near-repeats


@pytest.mark.parametrize(("question", "evidence", "speaker"), KNOWN)
def test_evidence_turn_is_visible_in_the_default_context(conv26: Memory, question: str, evidence: str, speaker: str):
    """The benchmarks' measure: the evidence turn's whole text is in the rendered context (default budget).

    It used to ask for rank <= 20; with the full stop list on BM25 queries (adopted on the development
    splits, issue 21) the meteor-shower turn, which shares no content word with its question but the
    name, went from rank 15 to 25 while overall recall rose; what a reader sees is what counts.
    """
    ctx = conv26.search(question, user_id="conv-26")
    hit = next((h for h in ctx.hits if evidence in h.unit.source_ids), None)
    assert hit is not None, f"{evidence} not in the context for {question!r}"
    assert hit.text in ctx.render()
    assert hit.unit.speaker == speaker
    assert hit.unit.event_time is not None and hit.unit.event_time.year == 2023
    assert ctx.tokens <= 6000


def test_image_captions_are_searchable(conv26: Memory):
    ctx = conv26.search("painting of a sunset with a palm tree", user_id="conv-26", top_k=5)
    assert "D8:6" in {s for h in ctx.hits for s in h.unit.source_ids}


def test_cli_ingest_and_search_with_the_documented_spelling(data_dir: Path, tmp_path: Path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    locomo = data_dir / "locomo" / "locomo10.json"
    runner = CliRunner()
    res = runner.invoke(app, ["ingest", "locomo", str(locomo), "--store", "./mem", "--conversation", "conv-26"])
    assert res.exit_code == 0, res.output
    assert "419 turns" in res.output
    res = runner.invoke(app, ["search", "What subject have Caroline and Melanie both painted?", "--store", "./mem", "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert len(data["hits"]) >= 20 and data["tokens"] <= 6000
    first = data["hits"][0]
    assert first["unit"]["speaker"] in {"Caroline", "Melanie"}
    assert first["unit"]["event_time"] and "paint" in first["unit"]["summary"].lower()
    assert first["ranks"]["speaker"] == 1  # the question names both speakers: their turns are favoured
    assert any("paint" in h["unit"]["summary"].lower() for h in data["hits"][:5])
    table = runner.invoke(app, ["search", "What subject have Caroline and Melanie both painted?", "--store", "./mem"])
    assert table.exit_code == 0 and "Melanie" in table.output and "2023-" in table.output
