"""The candidates stage: what the dense index and BM25 return for a query, and the units the graph reaches.

Its settings are the "Candidates" and "BM25" groups of :data:`omnimem.config.STAGES` (``dense``, ``sparse``,
``depth``, ``sparse_depth``, ``query_stop_words``). Each list is a backend's answer within the search's
filtered view (scope, supersession, ``as_of``, trust), best first, as ``(row id, score)``.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from functools import cache
from typing import TYPE_CHECKING, Any

from omnimem import otel
from omnimem.engine.deps import Deps
from omnimem.engine.state import WriterState
from omnimem.mau import MAU, Scope
from omnimem.store.base import Candidates
from omnimem.text import content_words

if TYPE_CHECKING:
    from omnimem.graph.engine import GraphInfo

GRAPH_POOL = 500  # the graph's best units fetched per search, at most (more when the retrievers read deeper)
SIDE_THREADS = 4  # BM25 queries run beside their search's dense one at once, per process (more wait their turn)
Scored = list[tuple[int, float]]


@cache  # a second pool made in a race would hold no thread: threads start with the first query
def _side() -> ThreadPoolExecutor:
    """The threads a search's BM25 query runs in beside its dense one, where the backend says so."""
    return ThreadPoolExecutor(SIDE_THREADS, thread_name_prefix="omnimem-search-text")


class CandidateStage:
    """Dense and BM25 lists of a query, and the graph's units, within a search's view."""

    def __init__(self, deps: Deps, state: WriterState) -> None:
        self.deps = deps
        self.state = state  # its lock guards the store's reads of graph units

    def first(self, view: Candidates, qvec: Any, text: str, depth: int) -> tuple[Scored, Scored]:
        """The first pass's dense and BM25 lists; side by side where each waits on a database server."""
        settings = self.deps.settings
        if settings.dense and settings.sparse and view.together:
            side = _side().submit(contextvars.copy_context().run, self._text_stage, view, text, depth)
            try:
                with otel.stage("omnimem.search.dense"):
                    dense = view.dense(qvec, depth)
            finally:
                sparse = side.result()  # waited for even when dense failed: no query outlives its search
            return dense, sparse
        with otel.stage("omnimem.search.dense"):
            dense = self.dense(view, qvec, depth)
        return dense, self._text_stage(view, text, depth)

    def dense(self, view: Candidates, qvec: Any, depth: int) -> Scored:
        """The dense list of ``qvec``, ``depth`` deep; nothing when dense search is off."""
        return view.dense(qvec, depth) if self.deps.settings.dense else []

    def _text_stage(self, view: Candidates, text: str, depth: int) -> Scored:
        with otel.stage("omnimem.search.sparse"):
            return self.text(view, text, depth)

    def text(self, view: Candidates, text: str, depth: int) -> Scored:
        """BM25 over ``text`` without the stop list's words (question words must not decide a match), read
        ``sparse_depth`` deep (else ``depth``, as dense); nothing when BM25 is off."""
        settings = self.deps.settings
        if not settings.sparse:
            return []
        return view.text(content_words(text) if settings.query_stop_words else text, settings.sparse_depth or depth)

    def graph(self, query: str, scope: Scope, view: Candidates, depth: int) -> tuple[list[int], GraphInfo]:
        """The units the graph reaches from the query's entities, best entity score first (ties by unit id),
        that this search admits (scope, supersession, ``as_of``): at most ``depth`` row ids."""
        assert self.deps.graph is not None
        unit_scores, info = self.deps.graph.expand_units(query, scope)
        reached = self.graph_admitted(unit_scores, unit_scores, view, max(depth, GRAPH_POOL))
        return [rid for rid, _ in reached][:depth], info

    def graph_admitted(self, unit_ids: Iterable[str], unit_scores: Mapping[str, float], view: Candidates,
                       limit: int) -> list[tuple[int, MAU]]:
        """The best ``limit`` of ``unit_ids`` by graph score (ties by unit id), fetched, that this search admits
        (scope, supersession and ``as_of`` at once), in that order."""
        pool = sorted(unit_ids, key=lambda u: (-unit_scores[u], u))[:limit]
        if not pool:
            return []
        with self.state.lock:
            found = self.deps.store.get_with_rids(pool)
        admitted = view.admitted([rid for rid, _ in found])
        position = {uid: i for i, uid in enumerate(pool)}
        return sorted(((rid, unit) for rid, unit in found if rid in admitted), key=lambda r: position[r[1].id])
