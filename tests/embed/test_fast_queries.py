"""A writable store of the torch MiniLM embeds its queries with the int8 ONNX copy, and stores only torch vectors.

``fast_queries`` (on by default) gives a warm ``Memory``, and so the server and MCP, the query model of
:mod:`omnimem.embed.query`; ``fast_queries=False`` keeps the store's own model for queries too. Whatever
the setting, every stored vector is the store's model's: the store never mixes models.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from omnimem import Memory
from omnimem.embed.base import embed_queries
from omnimem.embed.minilm import MODEL_NAME, MiniLMEmbedder
from omnimem.embed.onnx import ONNX_NAME, OnnxMiniLMEmbedder
from omnimem.embed.query import FastQueries, with_fast_queries

pytestmark = pytest.mark.slow  # loads the torch and the ONNX MiniLM

TURN = {"speaker": "Alex", "text": "I painted the lighthouse at Point Reyes in watercolour.", "time": "2024-03-02"}
QUERY = "What did Alex paint?"


def searched_and_stored(mem: Memory) -> tuple[float, np.ndarray]:
    """The best hit's similarity to QUERY, and the vector the store holds for it."""
    hit = mem.search(QUERY, user_id="u1").hits[0]
    unit = mem.get(hit.unit.id, user_id="u1")
    assert unit.embedding is not None
    return hit.similarity, np.asarray(unit.embedding)


def test_a_minilm_store_is_searched_with_the_onnx_copy_and_stores_torch_vectors(tmp_path: Path) -> None:
    torch_model, onnx_model = MiniLMEmbedder(), OnnxMiniLMEmbedder()
    with Memory(tmp_path / "m") as mem:
        mem.add_dialogue([TURN], user_id="u1", session_id="s1")
        similarity, stored = searched_and_stored(mem)
        assert mem.embedder.name == MODEL_NAME and mem.stats()["embedder"] == MODEL_NAME  # what the store records
        assert np.array_equal(embed_queries(mem.embedder, [QUERY]), onnx_model.embed([QUERY]))
    assert float(torch_model.embed([f"Alex: {TURN['text']}"])[0] @ stored) == pytest.approx(1.0, abs=1e-6)
    onnx_query, torch_query = onnx_model.embed([QUERY])[0], torch_model.embed([QUERY])[0]
    assert similarity == pytest.approx(float(onnx_query @ stored), abs=1e-6)
    assert abs(similarity - float(torch_query @ stored)) > 1e-4  # not the torch query: the two models differ here


def test_fast_queries_off_searches_with_the_stores_own_model(tmp_path: Path) -> None:
    with Memory(tmp_path / "m", fast_queries=False) as mem:
        mem.add_dialogue([TURN], user_id="u1", session_id="s1")
        similarity, stored = searched_and_stored(mem)
        assert isinstance(mem.embedder, MiniLMEmbedder)
    assert similarity == pytest.approx(float(MiniLMEmbedder().embed([QUERY])[0] @ stored), abs=1e-6)


def test_only_a_model_with_a_measured_equivalent_gets_one(tmp_path: Path) -> None:
    with Memory(tmp_path / "fake", embedder="fake") as mem:
        assert mem.embedder.name == "fake" and not isinstance(mem.embedder, FastQueries)
    with Memory(tmp_path / "onnx", embedder="onnx") as mem:  # the ONNX model is its own store's model
        assert mem.embedder.name == ONNX_NAME and not isinstance(mem.embedder, FastQueries)
    routed = with_fast_queries(MiniLMEmbedder(), True)
    assert isinstance(routed, FastQueries) and with_fast_queries(routed, True) is routed
    assert isinstance(routed.query_model, OnnxMiniLMEmbedder) and routed.query_model.threads == 1  # one core a query
    assert isinstance(with_fast_queries(routed, False), MiniLMEmbedder)  # unwrapped when switched off


def test_a_reopened_store_and_a_second_memory_keep_the_stores_model(tmp_path: Path) -> None:
    with Memory(tmp_path / "a") as first:
        first.add_dialogue([TURN], user_id="u1", session_id="s1")
        with Memory(tmp_path / "b", embedder=first.embedder) as second:  # handed the routed embedder
            second.add_dialogue([TURN], user_id="u1", session_id="s1")
            assert second.stats()["embedder"] == MODEL_NAME
            _, stored_b = searched_and_stored(second)
        _, stored_a = searched_and_stored(first)
    assert np.allclose(stored_a, stored_b, atol=1e-6)
    with Memory(tmp_path / "a", fast_queries=False) as again:
        assert again.stats()["embedder"] == MODEL_NAME and isinstance(again.embedder, MiniLMEmbedder)


def test_a_large_write_is_embedded_in_slices_with_the_vectors_of_one_call() -> None:
    words = "the harbour light was painted blue by Alex after the long winter storm".split()
    texts = [" ".join(words[: 2 + (n * 7) % 12]) + f" {n}" for n in range(64)]  # lengths vary, order mixed
    routed = with_fast_queries(MiniLMEmbedder(), True)
    assert isinstance(routed, FastQueries)
    before = routed.gate.served["slices"]
    assert np.allclose(routed.embed(texts), MiniLMEmbedder().embed(texts), atol=1e-6)
    assert routed.gate.served["slices"] - before >= 2  # slices of 32 (8 with queries about), longest first
