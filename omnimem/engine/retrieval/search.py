"""Retrieval: a search as a pipeline of stages, each built once when the engine opens.

The facade validates arguments and hands over here. A search runs, in order:

1. the query's vectors (:meth:`Retriever.query_vectors`, the store's embedder or its fast query copy);
2. candidates (:class:`~omnimem.engine.retrieval.candidates.CandidateStage`): the dense and BM25 lists;
3. fusion (:class:`~omnimem.engine.retrieval.reordering.Fusion`): one order, by rank fusion or set union;
4. signals (:class:`~omnimem.engine.retrieval.reordering.SignalStage`): the speaker field, feedback, the
   hand-set signals, the graph's list, the learnt ranking, the plugins' signals and a reranker re-order it;
5. packing (:mod:`omnimem.engine.retrieval.packing`): the ranking into a pyramid context under the budget;
6. depth (:mod:`omnimem.engine.retrieval.depth`): where the depth, not the budget, bounded the context,
   the query is ranked again, deeper, and packed again.

Planning (:mod:`omnimem.engine.retrieval.planning`) runs this once per query the planner asks. Searches take
the engine's lock only to catch up with other processes' writes; the index searches, row fetches, embedding
and packing run outside it, so searches run in parallel.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any

from omnimem import otel
from omnimem.contract.caller import off_cpu
from omnimem.embed.base import embed_queries
from omnimem.engine.deps import Deps
from omnimem.engine.retrieval.candidates import CandidateStage
from omnimem.engine.retrieval.content import full_text, raw_content
from omnimem.engine.retrieval.depth import DEEPER_ROUNDS, deeper, first_depth
from omnimem.engine.retrieval.line_costs import LineCosts
from omnimem.engine.retrieval.packing import packer_for
from omnimem.engine.retrieval.ranking import Ranking, Sources
from omnimem.engine.retrieval.reordering import Fusion, SignalStage
from omnimem.engine.retrieval.row_cache import RowCache
from omnimem.engine.retrieval.signals import Signal
from omnimem.engine.state import WriterState
from omnimem.mau import MAU, Scope
from omnimem.results import Context, RawContent
from omnimem.store.base import SearchFilter


class Retriever:
    """Runs searches against one engine's store and indexes: its stages, built once."""

    def __init__(self, deps: Deps, state: WriterState) -> None:
        self.deps = deps
        self.state = state  # the writer's: the lock of the catch-up, the embedder and search reembed swaps
        settings = deps.settings
        self.line_costs = LineCosts(deps.count_tokens, words=settings.line_words,
                                    elide=bool(settings.elide_speakers) and settings.packing == "day",
                                    fence=settings.fence_untrusted)
        self.rows = RowCache()  # units read since the store last changed (packing reads mostly the same rows)
        self.candidates = CandidateStage(deps, state)
        self.fusion = Fusion(settings)
        self.signals = SignalStage(deps, state, self.candidates, self.fusion)
        self.packer = packer_for(deps, state, self.candidates, self.line_costs, self.rows,
                                 (self.full_text, self.raw), self.signals.fused_graph)

    def search(
        self, query: str, top_k: int, theta: float, budget: int, scope: Scope, include_superseded: bool,
        when: datetime | None, now: datetime | None = None, min_trust: str | None = None,
        vectors: tuple[Any, Any] | None = None,
    ) -> Context:
        """Dense + BM25 fused, same-session neighbours, CLIP and graph candidates, then the pyramid.

        ``now`` (default: the wall clock) is what relative times in the query ("last week") are read against;
        ``min_trust`` admits only units at least that trusted; ``vectors`` the query's (:meth:`query_vectors`),
        when embedded already.
        """
        ranking = self.rank(query, top_k, budget, scope, include_superseded, when, now, vectors=vectors,
                            min_trust=min_trust)
        return self.filled(self.pack(query, ranking, top_k, theta, budget, scope), ranking, query, top_k, budget,
                           scope, include_superseded, when, now,
                           lambda deeper: self.pack(query, deeper, top_k, theta, budget, scope), min_trust=min_trust)

    def searched(self, query: str, scope: Scope) -> str:
        """What dense and BM25 search first for ``query`` (:meth:`SignalStage.searched`)."""
        return self.signals.searched(query, scope)

    def query_vectors(self, text: str, searched: str) -> tuple[Any, Any]:
        """``(qvec, asked)``: the vector dense ranks by and the vector of the query as asked (names and all),
        which a hit's score is measured against; the same one unless names are stripped (:meth:`searched`)."""
        m = self.deps
        stripped = m.settings.dense_without_names and searched != text
        with otel.stage("omnimem.search.embed"):
            qvec = embed_queries(self.state.embedder, [searched if m.settings.dense_without_names else text])[0]
            return qvec, embed_queries(self.state.embedder, [text])[0] if stripped else qvec

    def filled(
        self, ctx: Context, ranking: Ranking, query: str, top_k: int, budget: int, scope: Scope,
        include_superseded: bool, when: datetime | None, now: datetime | None, pack: Callable[[Ranking], Context],
        min_trust: str | None = None,
    ) -> Context:
        """``ctx``, or where the depth and not the budget bounded it (short messages run out of candidates
        first: :mod:`omnimem.engine.retrieval.depth`), ``query`` ranked again, deeper, with ``ranking``'s
        vectors, and packed by ``pack``, at most ``DEEPER_ROUNDS`` times."""
        for _ in range(DEEPER_ROUNDS):
            depth = deeper(self.deps.settings, ctx, ranking.depth, ranking.full, top_k, budget)
            if not depth:
                break
            ranking = self.rank(query, top_k, budget, scope, include_superseded, when, now, depth=depth,
                                vectors=ranking.vectors, again=True, min_trust=min_trust)
            ctx = pack(ranking)
        return ctx

    def rank(
        self, query: str, top_k: int, budget: int, scope: Scope, include_superseded: bool, when: datetime | None,
        now: datetime | None = None, *, depth: int = 0, vectors: tuple[Any, Any] | None = None, again: bool = False,
        min_trust: str | None = None,
    ) -> Ranking:
        """The fused ranking of one query (candidates, fusion and signals), before anything is packed.

        ``depth`` (0: the settings') is how deep each retriever is read; ``vectors`` the query's vectors from
        an earlier ranking of the same query (:attr:`Ranking.vectors`), not embedded again. ``again``: a later
        ranking of a search already under way, which ``close`` waits for (``WriterState.reading``): it goes on
        even when ``close`` began meanwhile, where a new search is refused.
        """
        m = self.deps
        settings = m.settings
        # ``top_k`` bounds the hits (0: as many as the budget holds); each retriever is read deep enough to fill
        # the budget, or, in the paper's union fusion, to ``depth`` (default: top_k, else 20) per retriever
        depth = depth or first_depth(settings, top_k, budget)
        searched = self.searched(query, scope)
        if vectors is None:
            with off_cpu():  # the wait for the model holds no search slot
                vectors = self.query_vectors(query, searched)
        qvec, asked = first = vectors
        with self.state.lock:  # short: catch up with other processes' writes (in-process writers hold the lock
            if not again:  # while they store and index a batch, so this never indexes half a batch)
                self.state.check_open()
            self.state.search.sync()
            seq = m.store.seq()
        # no engine lock from here: the indexes let searches run together (FAISS and numpy release the GIL)
        # and the store guards its own connection
        view = self.state.search.within(SearchFilter(scope, include_superseded, when, min_trust))  # in the backend
        dense, sparse = self.candidates.first(view, qvec, searched, depth)
        full = len(dense) >= depth if settings.dense else len(sparse) >= depth  # the scope may hold more
        order = self.fusion.order(dense, sparse)
        extra: list[Signal] = []
        graph_info = None
        signals = self.signals
        if signals.active:
            with otel.stage("omnimem.search.signals"):
                qvec, order, dense, sparse, extra, graph_info = signals.reorder(
                    query, searched, scope, qvec, asked, view, depth, dense, sparse, order,
                    now or datetime.now(timezone.utc))
        order, plugged = signals.plugged(query, order, dense, sparse)  # the plugins' signals, on the order as is
        order, reranked = signals.reranked(query, order)
        if top_k:
            order = order[:top_k]
        sources = Sources([r for r, _ in dense], [r for r, _ in sparse], self.fusion.rrf, reranked,
                          [*extra, *plugged])
        return Ranking(order, sources, asked, view, depth, seq, graph_info, signals.fused_graph, full, first)

    def pack(self, query: str, ranking: Ranking, top_k: int, theta: float, budget: int, scope: Scope) -> Context:
        """The pyramid context of a ranking, packed into ``budget`` by the packer chosen once
        (:func:`~omnimem.engine.retrieval.packing.packer_for`)."""
        return self.packer.pack(query, ranking, top_k, theta, budget, scope)

    def full_text(self, unit: MAU) -> str | None:
        """Level-2 text (see :func:`omnimem.engine.retrieval.content.full_text`)."""
        return full_text(self.deps.store, unit)

    def raw(self, unit: MAU) -> RawContent | None:
        """Level-3 content: media only (a text unit's raw content is its full text, level 2)."""
        return raw_content(unit)
