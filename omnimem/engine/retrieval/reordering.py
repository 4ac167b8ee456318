"""The fusion and signals stages: the candidates' lists fused into one order, then re-ordered.

:class:`Fusion` (settings: the "Fusion and ranking" group) merges the dense and BM25 lists by the rule chosen
when the engine opens: reciprocal rank fusion, or the paper's set union (``fusion="union"``, which has no
scores, so nothing re-orders it). :class:`SignalStage` (the "Ranking signals" group, ``ranking`` and
``reranker``) re-orders the fused head: the speaker a query names as a field, pseudo-relevance feedback,
the hand-set signals, the graph's list, the learnt ranking, the plugins' signals and a cross-encoder. Each
part is built once; a search runs the parts its settings turned on.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from functools import partial
from typing import TYPE_CHECKING, Any

from omnimem import otel
from omnimem.config import Settings
from omnimem.contract.caller import off_cpu
from omnimem.embed.base import embed_queries
from omnimem.engine.deps import Deps
from omnimem.engine.retrieval.candidates import CandidateStage, Scored
from omnimem.engine.retrieval.learnt import SINK_DEPTH, features, learnt_order, load_ranker
from omnimem.engine.retrieval.plugins import load_signals, plugin_order
from omnimem.engine.retrieval.ranking import Sources
from omnimem.engine.retrieval.rerank import Reranker
from omnimem.engine.retrieval.signals import (FactCache, Signal, SpeakerMemo, bounded, feedback_vector,
                                              named_speakers, signals, wanted, without_names)
from omnimem.engine.state import WriterState
from omnimem.fusion import rrf_order, union_merge
from omnimem.mau import Scope, search_text
from omnimem.store.base import Candidates

if TYPE_CHECKING:
    from omnimem.graph.engine import GraphInfo

Sink = Callable[[str, list[int], Any, Mapping[int, Any]], None]


class Fusion:
    """Dense and BM25 row ids fused into one order by the rule the settings chose once."""

    def __init__(self, settings: Settings) -> None:
        self.union = settings.fusion == "union"
        self.rrf = None if self.union else (settings.rrf_k, settings.sparse_weight)  # Sources' score rule
        self.rank_fused = partial(rrf_order, k=settings.rrf_k, sparse_weight=settings.sparse_weight)
        self.merge: Callable[[list[int], list[int]], list[int]] = (  # rrf_merge's order, in numpy
            union_merge if self.union else self.rank_fused)

    def order(self, dense: Scored, sparse: Scored) -> list[int]:
        return self.merge([r for r, _ in dense], [r for r, _ in sparse])


class SignalStage:
    """What re-orders a fused ranking, built once from the settings (rank fusion only)."""

    def __init__(self, deps: Deps, state: WriterState, candidates: CandidateStage, fusion: Fusion) -> None:
        self.deps, self.state, self.candidates, self.fusion = deps, state, candidates, fusion
        settings = deps.settings
        learnt = settings.ranking != "rules"  # the learnt ranking reads every signal's facts
        # what the ranking signals read of each row (a unit's stated words only when that signal is on)
        self.facts = FactCache(statements=learnt or settings.statement_weight > 0,
                               replies=learnt or settings.reply_weight > 0)
        self.ranker = load_ranker(settings.ranking) if learnt else None
        self.plugins = load_signals(settings)  # the plugins' ranking signals
        self.sink: Sink | None = None  # a ranker's training reads each head's features here (learnt.watch)
        self.speakers = SpeakerMemo()  # the speakers seen in each scope's heads: names are stripped up front
        self.fused_graph = not fusion.union and deps.graph is not None and settings.graph_weight > 0
        self._reranker: Reranker | None = None

    @property
    def active(self) -> bool:
        """Whether the built-in signals re-order the fused order (union fusion has no scores to re-order)."""
        settings = self.deps.settings
        return not self.fusion.union and bool(settings.prf_docs or wanted(settings) or self.fused_graph
                                              or self.ranker is not None or self.sink is not None)

    def searched(self, query: str, scope: Scope) -> str:
        """What dense and BM25 search first for ``query``: a query naming a speaker seen before in ``scope`` is
        searched without the name at once (the name is a field, :meth:`reorder`), so it is embedded and
        searched once, not twice; checked there."""
        settings = self.deps.settings
        fielded = not self.fusion.union and settings.speaker_field and settings.speaker_weight > 0
        return without_names(query, named_speakers(query, self.speakers.get(scope))) if fielded else query

    def reorder(
        self, query: str, searched: str, scope: Scope, qvec: Any, asked: Any, view: Candidates, depth: int,
        dense: Scored, sparse: Scored, order: list[int], now: datetime,
    ) -> tuple[Any, list[int], Scored, Scored, list[Signal], GraphInfo | None]:
        """Speaker names as a field, pseudo-relevance feedback and the ranking signals over the fused head.

        ``searched`` is what the first pass searched: the query, or the query without the names of speakers
        seen in ``scope`` before; ``asked`` the vector of ``query``. Returns the new (query vector, order, dense,
        sparse, signals): with a speaker matched as the field, the vector dense ranks by is the rest of the
        query's (with ``dense_without_names``; else ``asked``, and only BM25 searches the rest). Hits are
        scored against ``asked`` either way. With the graph fused (``graph_weight``) its units are one more list
        (graph-only units included), and the graph's report comes back too.
        """
        m = self.deps
        settings = m.settings
        fuse = self.fusion.rank_fused
        rows = self.facts.get(order[: settings.signal_depth], m.store.get_rows)
        speakers = [f.speaker for f in rows.values()]
        if settings.speaker_weight > 0:
            self.speakers.learn(scope, speakers)
        named = named_speakers(query, speakers) if settings.speaker_weight > 0 else set()
        rest = without_names(query, named) if settings.speaker_field else query
        if rest != searched:  # the head's speakers say another text is to be searched: the query without the
            # names it holds (the speaker signal below makes them a field), or the query itself
            if settings.dense_without_names:  # else dense read the query as asked already
                with otel.stage("omnimem.search.embed"), off_cpu():
                    qvec = asked if rest == query else embed_queries(self.state.embedder, [rest])[0]
                dense = self.candidates.dense(view, qvec, depth)
            sparse = self.candidates.text(view, rest, depth)
            order = fuse([r for r, _ in dense], [r for r, _ in sparse])
        if settings.prf_docs:  # Rocchio: the query moved towards the best candidates' vectors, dense again
            units = m.store.get_rows(order[: settings.prf_docs])
            vectors = [v for r in order[: settings.prf_docs] if r in units and (v := units[r].embedding) is not None]
            dense = view.dense(feedback_vector(qvec, vectors, settings.prf_weight), depth)
            order = fuse([r for r, _ in dense], [r for r, _ in sparse])
        extra: list[Signal] = []
        if wanted(settings):
            head = order[: settings.signal_depth]
            rows = self.facts.get(head, m.store.get_rows)
            plain = Sources([r for r, _ in dense], [r for r, _ in sparse], (settings.rrf_k, settings.sparse_weight))
            fused = {rid: plain.explain(rid)[0] or 0.0 for rid in head}
            extra = signals(query, head, rows, fused, settings, now, named)
        info = None
        if self.fused_graph:
            graph, info = self.candidates.graph(query, scope, view, depth)
            if graph:
                extra.append(Signal("graph", graph, settings.graph_weight))
        if extra:  # a signal re-orders near ties, never buries a clear match of both retrievers (signal_margin)
            lifted = fuse([r for r, _ in dense], [r for r, _ in sparse], extra=[(x.rids, x.weight) for x in extra])
            order = bounded(lifted, order, dense, sparse, extra, settings)
        if self.ranker is not None or self.sink is not None:  # the learnt ranking re-orders the head
            head = order[: self.ranker.depth if self.ranker is not None else SINK_DEPTH]
            facts = self.facts.get(head, m.store.get_rows)
            x = features(query, head, facts, dense, sparse, settings, now, named)
            if self.sink is not None:
                self.sink(query, head, x, facts)
            if self.ranker is not None:  # like a signal, the model never buries a clear match of both retrievers
                moved = learnt_order(order, self.ranker, x)
                order = bounded(moved, order, dense, sparse, [Signal("learnt", head, 1.0), *extra], settings)
        return qvec, order, dense, sparse, extra, info

    def plugged(self, query: str, order: list[int], dense: Scored, sparse: Scored
                ) -> tuple[list[int], list[Signal]]:
        """The plugins' signals fused with ``order`` as it stands (none: ``order`` itself)."""
        if not self.plugins or self.fusion.union:
            return order, []
        settings = self.deps.settings
        return plugin_order(query, order, self.deps.store.get_rows(order[: settings.signal_depth]), self.plugins,
                            dense, sparse, settings)

    def reranked(self, query: str, order: list[int]) -> tuple[list[int], dict[int, int]]:
        """``order`` with its first ``rerank_depth`` rows re-ordered by the reranker (``reranker``, off by
        default), and their new ranks."""
        m = self.deps
        if not m.settings.reranker:
            return order, {}
        if self._reranker is None or self._reranker.path != m.settings.reranker:
            self._reranker = Reranker(str(m.settings.reranker))
        head = order[: m.settings.rerank_depth]
        rows = m.store.get_rows(head)
        head = [rid for rid in head if rid in rows]  # deleted meanwhile: left out
        best = self._reranker.order(query, [search_text(rows[r].speaker, rows[r].summary) for r in head])
        new = [head[i] for i in best]
        taken = set(new)
        return new + [r for r in order if r not in taken], {rid: i for i, rid in enumerate(new, 1)}
