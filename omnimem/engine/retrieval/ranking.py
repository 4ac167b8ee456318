"""A query's fused ranking and what each candidate's place in it came from.

:class:`Ranking` is what ranking a query hands to packing (:meth:`omnimem.engine.retrieval.search.Retriever.pack`);
:class:`Sources` says which retrievers found each candidate, at which rank, and its fused score, what every
hit reports (``Hit.sources``, ``Hit.fused``, ``Hit.ranks``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from copy import copy
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from omnimem.engine.retrieval.signals import Signal
from omnimem.mau import MAU
from omnimem.store.base import Candidates

if TYPE_CHECKING:
    from omnimem.graph.engine import GraphInfo


@dataclass(frozen=True)
class Ranking:
    """One query's fused ranking, what :meth:`Retriever.pack` turns into a context: the row ids best first,
    which retrievers found them, the vector of the query as asked (hits are scored against it), the filtered
    view and depth searched, the store's write sequence then, and the graph's report."""

    order: list[int]
    sources: Sources
    asked: Any
    view: Candidates
    depth: int
    seq: int
    graph_info: GraphInfo | None = None
    fused_graph: bool = False
    full: bool = False  # a retriever's list came back as deep as asked: the scope may hold more candidates
    vectors: tuple[Any, Any] | None = None  # the query's vectors (searched, as asked), for a deeper ranking


class Sources:
    """Which retrievers found each candidate, at which rank, and its fused score (made once, shared)."""

    DENSE, SPARSE, BOTH = frozenset({"dense"}), frozenset({"sparse"}), frozenset({"dense", "sparse"})
    GRAPH = frozenset({"graph"})
    PLAN = frozenset({"plan"})

    def __init__(self, dense: list[int], sparse: list[int], rrf: tuple[int, float] | None,
                 reranked: dict[int, int] | None = None, extra: Sequence[Signal] = ()) -> None:
        self._dense = dense
        self._sparse = sparse
        self.dense = set(dense)
        self.sparse = set(sparse)
        self.rrf = rrf  # (rrf_k, sparse weight); None: union fusion, which has no score
        self._ranks: tuple[dict[int, int], dict[int, int]] | None = None
        self.reranked = reranked or {}  # row id -> rank given by the reranker
        self.extra = [(x.name, {rid: i for i, rid in enumerate(x.rids, 1)}, x.weight) for x in extra]  # signals
        self.graph = {rid for x in extra if x.name == "graph" for rid in x.rids}
        self.planned: frozenset[int] = frozenset()  # rows only a planner's other queries found

    def with_planned(self, rows: Iterable[int]) -> Sources:
        """These sources, with ``rows`` marked as found by a planner's other queries (source ``plan``)."""
        other = copy(self)
        other.planned = frozenset(rows)
        return other

    def explain(self, rid: int) -> tuple[float | None, dict[str, int]]:
        """(fused score, rank in each retriever) of one row: only hits need it, so the maps are made lazily.

        Called for every hit (~160 in a 6,000-token context): kept to a few dict lookups.
        """
        if self._ranks is None:  # first occurrence wins: reversed, so earlier ranks overwrite later ones
            self._ranks = (dict(zip(reversed(self._dense), range(len(self._dense), 0, -1))),
                           dict(zip(reversed(self._sparse), range(len(self._sparse), 0, -1))))
        d = self._ranks[0].get(rid)
        s = self._ranks[1].get(rid)
        if d is not None:
            ranks = {"dense": d, "sparse": s} if s is not None else {"dense": d}
        else:
            ranks = {"sparse": s} if s is not None else {}
        if self.reranked and rid in self.reranked:
            ranks["rerank"] = self.reranked[rid]
        if self.rrf is None:
            return None, ranks
        k, weight = self.rrf
        fused = 0.0  # summed in rrf_order's order (dense term first), so it equals the ranking's sum
        if d is not None:
            fused += 1.0 / (k + d)
        if s is not None:
            fused += weight / (k + s)
        for name, signal_ranks, signal_weight in self.extra:
            r = signal_ranks.get(rid)
            if r is not None:
                ranks[name] = r
                fused += signal_weight / (k + r)
        return fused, ranks

    def of(self, rid: int) -> frozenset[str]:
        """The retrievers that found the row: dense, sparse, and the graph when it is a fused list (the other
        signals only re-order what these found)."""
        if rid in self.dense:
            found = self.BOTH if rid in self.sparse else self.DENSE
        else:
            found = self.SPARSE if rid in self.sparse else frozenset()
        if rid in self.graph:
            found |= self.GRAPH
        return found | self.PLAN if rid in self.planned else found


def similarity(qvec: Any, unit: MAU) -> float:
    """Cosine similarity of a query vector and a unit's (both normalised)."""
    return float(np.dot(qvec, unit.embedding)) if unit.embedding is not None else 0.0
