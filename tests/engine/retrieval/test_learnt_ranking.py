"""The learnt ranking: a small model over the fused head's features re-orders it (``ranking="learnt"``).

The packaged model is trained on the dev splits by ``python -m benchmarks ranker-train``; a search
applies it with numpy. A model file of one's own is a JSON file of the same form.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pytest

from omnimem import ConfigError, Memory
from omnimem.config import Settings
from omnimem.engine.retrieval.learnt import FEATURES, LinearRanker, features, learnt_order, load_ranker
from omnimem.engine.retrieval.signals import RowFacts
from omnimem.mau import Scope

TURNS = [
    ("Sam", "What did you paint last weekend, Alex?"),
    ("Alex", "I painted a sunset over the lake, all orange and purple."),
    ("Sam", "Did you paint it with oils or watercolours?"),
    ("Alex", "Watercolours: I paint faster with them than with oils."),
    ("Sam", "My sister paints too, mostly portraits."),
]


def model_file(tmp_path: Path, weights: dict[str, float], depth: int = 10) -> str:
    """A ranker file weighting only the features named."""
    n = len(FEATURES)
    ranker = LinearRanker(FEATURES, np.zeros(n), np.ones(n), np.array([weights.get(f, 0.0) for f in FEATURES]),
                          0.0, depth)
    path = tmp_path / "ranker.json"
    path.write_text(json.dumps(ranker.to_dict()))
    return str(path)


def ranked(mem: Memory, query: str) -> list[str]:
    ctx = mem.search(query, user_id="u")
    return [h.unit.summary for h in sorted(ctx.hits, key=lambda h: h.rank)]


def test_a_model_that_prefers_statements_puts_every_question_turn_after_them(tmp_path: Path):
    rules = Memory(embedder="fake", ranking="rules")
    # signal_margin=0: the model's order alone (by default a clear match of both retrievers keeps its place)
    learnt = Memory(embedder="fake", ranking=model_file(tmp_path, {"asks": -1.0}), signal_margin=0)
    for mem in (rules, learnt):
        mem.add_dialogue([{"speaker": s, "text": t} for s, t in TURNS], user_id="u", session_id="s1")
    asks = [t.endswith("?") for t in ranked(learnt, "what did Alex paint")]
    assert asks == sorted(asks)  # every statement first, then the questions
    assert sorted(ranked(learnt, "what did Alex paint")) == sorted(ranked(rules, "what did Alex paint"))
    assert [t.endswith("?") for t in ranked(rules, "what did Alex paint")] != asks  # the rules ranked otherwise


def test_the_packaged_model_loads_and_searches():
    ranker = load_ranker("learnt")
    assert ranker.features == FEATURES and ranker.depth >= 10 and np.isfinite(ranker.weights).all()
    mem = Memory(embedder="fake", ranking="learnt")
    mem.add_dialogue([{"speaker": s, "text": t} for s, t in TURNS], user_id="u", session_id="s1")
    ctx = mem.search("what did Alex paint", user_id="u", budget=200)
    assert ctx.hits and ctx.tokens <= 200
    assert sorted(h.unit.summary for h in mem.search("paint", user_id="u").hits) == sorted(t for _, t in TURNS)


def test_a_model_re_orders_only_its_depth_and_keeps_the_fused_order_on_ties():
    n = len(FEATURES)
    col = FEATURES.index("stated")
    ranker = LinearRanker(FEATURES, np.zeros(n), np.ones(n), np.eye(n)[col], 0.0, 3)
    x = np.zeros((3, n))
    x[:, col] = [0.0, 2.0, 2.0]
    assert learnt_order([7, 8, 9, 10, 11], ranker, x) == [8, 9, 7, 10, 11]


def test_features_read_each_retriever_and_signal_of_the_head():
    scope = Scope("u", None, "s1")
    t0 = datetime(2024, 5, 1, tzinfo=timezone.utc)
    rows = {1: RowFacts("Alex", t0, scope, 5, "a", None, False), 2: RowFacts("Sam", t0, scope, 0, "b", "a", True),
            3: RowFacts("Sam", t0, Scope("u", None, "s2"), 3, "c", None, False)}
    x = features("what did Alex paint", [1, 2, 3], rows, [(1, 0.9), (2, 0.5)], [(3, 4.0), (1, 2.0)],
                 Settings(), t0, {"Alex"})
    f = {name: x[:, i].tolist() for i, name in enumerate(FEATURES)}
    assert f["in_dense"] == [1, 1, 0] and f["in_sparse"] == [1, 0, 1] and f["in_both"] == [1, 0, 0]
    assert f["cosine"] == [0.9, 0.5, 0.5] and f["cosine_gap"] == pytest.approx([0.0, 0.4, 0.4])
    assert f["bm25_rel"] == [0.5, 0.0, 1.0] and f["speaker_in"] == [1, 0, 0] and f["speaker_out"] == [0, 1, 1]
    assert f["asks"] == [0, 1, 0] and f["neighbour_rel"][0] > 0 and f["neighbour_rel"][2] == 0  # 1 and 2 adjoin
    assert f["position_rr"] == [1.0, 0.5, pytest.approx(1 / 3)]


@pytest.mark.parametrize("bad", ["best", "missing.json"])
def test_an_unknown_ranking_is_a_config_error(bad: str):
    with pytest.raises(ConfigError, match="ranking"):
        Memory(embedder="fake", ranking=bad)


def test_a_model_file_of_other_features_is_refused_with_what_to_do(tmp_path: Path):
    path = Path(model_file(tmp_path, {}))
    data = json.loads(path.read_text())
    data["features"] = data["features"][:-1]
    path.write_text(json.dumps(data))
    with pytest.raises(ConfigError, match="ranker-train"):
        Memory(embedder="fake", ranking=str(path))
    path.write_text("{not json")
    with pytest.raises(ConfigError, match="cannot be read"):
        Memory(embedder="fake", ranking=str(path))
