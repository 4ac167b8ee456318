"""Retrieval: hybrid search, CLIP and graph candidates, the pyramid and raw content.

The facade validates arguments and hands over here; this module holds the
order of operations of a search. Searches take the engine's lock only to
catch up with other processes' writes; the index searches, row fetches,
embedding and packing run outside it, so searches run in parallel.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from functools import cache, partial
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from omnimem import otel
from omnimem.fusion import diversify, rrf_order, union_merge
from omnimem.embed.base import embed_queries
from omnimem.mau import MAU, Scope, search_text
from omnimem.engine.retrieval.content import full_text, raw_content, with_raw_bytes
from omnimem.engine.retrieval.depth import DEEPER_ROUNDS, deeper, first_depth
from omnimem.engine.retrieval.fitting import pack_fitting
from omnimem.engine.retrieval.plugins import load_signals, plugin_order
from omnimem.engine.retrieval.learnt import SINK_DEPTH, features, learnt_order, load_ranker
from omnimem.engine.retrieval.ranking import Ranking, Sources, similarity
from omnimem.engine.retrieval.rerank import Reranker
from omnimem.engine.retrieval.signals import (FactCache, Signal, SpeakerMemo, bounded, feedback_vector,
                                              named_speakers, signals, wanted, without_names)
from omnimem.engine.retrieval.line_costs import LineCosts
from omnimem.engine.retrieval.row_cache import RowCache
from omnimem.engine.retrieval.pyramid import Candidate, build_context
from omnimem.results import Context, RawContent
from omnimem.text import content_words
from omnimem.engine.deps import Deps
from omnimem.engine.state import WriterState
from omnimem.contract.caller import off_cpu
from omnimem.store.base import Candidates, SearchFilter

if TYPE_CHECKING:
    from omnimem.graph.engine import GraphInfo


GRAPH_POOL = 500  # the graph's best units fetched per search, at most (more when the retrievers read deeper)
SIDE_THREADS = 4  # BM25 queries run beside their search's dense one at once, per process (more wait their turn)


@cache  # a second pool made in a race would hold no thread: threads start with the first query
def _side() -> ThreadPoolExecutor:
    """The threads a search's BM25 query runs in beside its dense one, where the backend says so."""
    return ThreadPoolExecutor(SIDE_THREADS, thread_name_prefix="omnimem-search-text")


class Retriever:
    """Runs searches against one engine's store and indexes."""

    def __init__(self, deps: Deps, state: WriterState) -> None:
        self.deps = deps
        self.state = state  # the writer's: the lock of the catch-up, the embedder and search reembed swaps
        self.line_costs = LineCosts(deps.count_tokens, words=deps.settings.line_words,
                                    elide=bool(deps.settings.elide_speakers) and deps.settings.packing == "day",
                                    fence=deps.settings.fence_untrusted)
        self._reranker: Reranker | None = None
        # what the ranking signals read of each row (a unit's stated words only when that signal is on)
        learnt = deps.settings.ranking != "rules"  # the learnt ranking reads every signal's facts
        self.facts = FactCache(statements=learnt or deps.settings.statement_weight > 0,
                               replies=learnt or deps.settings.reply_weight > 0)
        self.ranker = load_ranker(deps.settings.ranking) if learnt else None
        self.plugins = load_signals(deps.settings)  # the plugins' ranking signals, built once
        # a ranker's training reads each head's features here: (query, head, features, facts)
        self.ranking_sink: Callable[[str, list[int], Any, Mapping[int, Any]], None] | None = None
        self.speakers = SpeakerMemo()  # the speakers seen in each scope's heads: names are stripped up front
        self.rows = RowCache()  # units read since the store last changed (packing reads mostly the same rows)

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
        """What dense and BM25 search first for ``query``: a query naming a speaker seen before in ``scope`` is
        searched without the name at once (the name is a field, :meth:`_signals`), so it is embedded and
        searched once, not twice; checked there."""
        settings = self.deps.settings
        fielded = settings.fusion != "union" and settings.speaker_field and settings.speaker_weight > 0
        return without_names(query, named_speakers(query, self.speakers.get(scope))) if fielded else query

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
        """The fused ranking of one query (dense, BM25 and the signals), before anything is packed.

        ``depth`` (0: the settings') is how deep each retriever is read; ``vectors`` the query's vectors from
        an earlier ranking of the same query (:attr:`Ranking.vectors`), not embedded again. ``again``: a later
        ranking of a search already under way, which ``close`` waits for (``WriterState.reading``): it goes on
        even when ``close`` began meanwhile, where a new search is refused.
        """
        m = self.deps
        settings = m.settings
        # ``top_k`` bounds the hits (0: as many as the budget holds); each retriever is read deep enough to fill
        # the budget, or, in the paper's union fusion, to ``depth`` (default: k, else 20) per retriever
        union = settings.fusion == "union"
        depth = depth or first_depth(settings, top_k, budget)
        merge = union_merge if settings.fusion == "union" else partial(  # rrf_merge's order, in numpy
            rrf_order, k=settings.rrf_k, sparse_weight=settings.sparse_weight)
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
        dense, sparse = self._lists(view, qvec, searched, depth)
        full = len(dense) >= depth if settings.dense else len(sparse) >= depth  # the scope may hold more
        order = merge([r for r, _ in dense], [r for r, _ in sparse])
        extra: list[Signal] = []
        graph_info = None
        fused_graph = not union and m.graph is not None and settings.graph_weight > 0  # the graph as a ranked list
        if not union and (settings.prf_docs or wanted(settings) or fused_graph or self.ranker is not None
                          or self.ranking_sink is not None):  # union fusion has no scores
            with otel.stage("omnimem.search.signals"):
                qvec, order, dense, sparse, extra, graph_info = self._signals(
                    query, searched, scope, qvec, asked, view, depth, dense, sparse, order,
                    now or datetime.now(timezone.utc), fused_graph)
        if self.plugins and not union:  # the plugins' signals re-order the ranking as it stands
            order, lists = plugin_order(query, order, m.store.get_rows(order[: settings.signal_depth]), self.plugins,
                                        dense, sparse, settings)
            extra = [*extra, *lists]
        reranked: dict[int, int] = {}
        if settings.reranker:  # a cross-encoder re-orders the best fused candidates (off by default)
            order, reranked = self._reranked(query, order)
        if top_k:
            order = order[:top_k]
        sources = Sources([r for r, _ in dense], [r for r, _ in sparse],
                          None if settings.fusion == "union" else (settings.rrf_k, settings.sparse_weight), reranked,
                          extra)
        return Ranking(order, sources, asked, view, depth, seq, graph_info, fused_graph, full, first)

    def pack(self, query: str, ranking: Ranking, top_k: int, theta: float, budget: int, scope: Scope) -> Context:
        """The pyramid context of a ranking: neighbours, CLIP and graph candidates added, packed into ``budget``."""
        m = self.deps
        settings = m.settings
        order, sources, asked, view, seq, graph_info = (ranking.order, ranking.sources, ranking.asked, ranking.view,
                                                        ranking.seq, ranking.graph_info)
        fused_graph, depth = ranking.fused_graph, ranking.depth
        appended_graph = m.graph is not None and settings.graph_k > 0 and not fused_graph
        plain = not (settings.diversity > 0 or (settings.neighbours and settings.expand_top) or m.clip is not None
                     or appended_graph)
        if plain:  # nothing but packing reads the candidates: fetch only the rows that fit
            with otel.stage("omnimem.search.pack", **{"omnimem.candidates": len(order)}):
                ctx = self._pack_fitting(query, asked, order, sources, scope, theta, budget, seq)
            if ctx is not None:
                if graph_info is not None:
                    ctx = replace(ctx, graph=graph_info.to_dict())
                return self._with_raw_bytes(ctx)
        units = m.store.get_rows(order)
        candidates = []
        rids: dict[str, int] = {}  # unit id -> row id, for the remembered line costs
        for rid in order:
            unit = units.get(rid)
            if unit is None or not scope.contains(unit.scope):  # deleted (or rewritten) between index and fetch
                continue
            candidates.append(Candidate(unit, similarity(asked, unit), sources.of(rid), *sources.explain(rid), seq=rid))
            rids[unit.id] = rid
        if settings.diversity > 0:  # one session must not fill the top alone (multi-part questions)
            candidates = diversify(candidates, lambda c: c.unit.scope, penalty=settings.diversity)
        if settings.neighbours and settings.expand_top:
            candidates = self._with_neighbours(candidates, asked, scope, view)
        if m.clip is not None:
            candidates += self._clip_candidates(query, depth, view, {c.unit.id for c in candidates}, asked)
        if appended_graph:
            candidates, graph_info = self._graph_candidates(query, asked, scope, view, candidates)
        if top_k:  # at most top_k hits, whatever neighbours, CLIP and the graph added
            candidates = candidates[:top_k]
        costs = self.line_costs.costs([(rids.get(c.unit.id), c.unit) for c in candidates], settings.packing)
        with otel.stage("omnimem.search.pack", **{"omnimem.candidates": len(candidates)}):
            ctx = build_context(
                query, candidates, theta=theta, budget=budget, full_text=self.full_text, raw_content=self.raw,
                max_level=settings.max_level, packing=settings.packing, count=self.line_costs, costs=costs,
                whole_share=settings.whole_share, whole_top=settings.whole_top, line_words=settings.line_words,
                stamp_gap=settings.stamp_gap, elide_speakers=settings.elide_speakers, fence=settings.fence_untrusted,
                max_source_share=settings.max_source_share,
            )
        if graph_info is not None:
            ctx = replace(ctx, graph=graph_info.to_dict())
        return self._with_raw_bytes(ctx)

    def _signals(
        self, query: str, searched: str, scope: Scope, qvec: Any, asked: Any, view: Candidates, depth: int,
        dense: list[tuple[int, float]], sparse: list[tuple[int, float]], order: list[int], now: datetime,
        fused_graph: bool = False,
    ) -> tuple[Any, list[int], list[tuple[int, float]], list[tuple[int, float]], list[Signal], GraphInfo | None]:
        """Speaker names as a field, pseudo-relevance feedback and the ranking signals over the fused head.

        ``searched`` is what the first pass searched: the query, or the query without the names of speakers
        seen in ``scope`` before; ``asked`` the vector of ``query``. Returns the new (query vector, order, dense,
        sparse, signals): with a speaker matched as the field, the vector dense ranks by is the rest of the
        query's (with ``dense_without_names``; else ``asked``, and only BM25 searches the rest). Hits are
        scored against ``asked`` either way. With ``fused_graph`` the graph's units are one more list
        (graph-only units included), and the graph's report comes back too.
        """
        m = self.deps
        settings = m.settings
        fuse = partial(rrf_order, k=settings.rrf_k, sparse_weight=settings.sparse_weight)
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
                dense = view.dense(qvec, depth) if settings.dense else []
            sparse = self._sparse(view, rest, depth)
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
        if fused_graph:
            graph, info = self._graph_list(query, scope, view, depth)
            if graph:
                extra.append(Signal("graph", graph, settings.graph_weight))
        if extra:  # a signal re-orders near ties, never buries a clear match of both retrievers (signal_margin)
            lifted = fuse([r for r, _ in dense], [r for r, _ in sparse], extra=[(x.rids, x.weight) for x in extra])
            order = bounded(lifted, order, dense, sparse, extra, settings)
        if self.ranker is not None or self.ranking_sink is not None:  # the learnt ranking re-orders the head
            head = order[: self.ranker.depth if self.ranker is not None else SINK_DEPTH]
            facts = self.facts.get(head, m.store.get_rows)
            x = features(query, head, facts, dense, sparse, settings, now, named)
            if self.ranking_sink is not None:
                self.ranking_sink(query, head, x, facts)
            if self.ranker is not None:  # like a signal, the model never buries a clear match of both retrievers
                moved = learnt_order(order, self.ranker, x)
                order = bounded(moved, order, dense, sparse, [Signal("learnt", head, 1.0), *extra], settings)
        return qvec, order, dense, sparse, extra, info

    def _lists(self, view: Candidates, qvec: Any, text: str, depth: int
               ) -> tuple[list[tuple[int, float]], list[tuple[int, float]]]:
        """The first pass's dense and BM25 lists; side by side where each waits on a database server."""
        settings = self.deps.settings
        if settings.dense and settings.sparse and view.together:
            side = _side().submit(contextvars.copy_context().run, self._sparse_stage, view, text, depth)
            try:
                with otel.stage("omnimem.search.dense"):
                    dense = view.dense(qvec, depth)
            finally:
                sparse = side.result()  # waited for even when dense failed: no query outlives its search
            return dense, sparse
        with otel.stage("omnimem.search.dense"):
            dense = view.dense(qvec, depth) if settings.dense else []
        return dense, self._sparse_stage(view, text, depth)

    def _sparse_stage(self, view: Candidates, text: str, depth: int) -> list[tuple[int, float]]:
        with otel.stage("omnimem.search.sparse"):
            return self._sparse(view, text, depth)

    def _sparse(self, view: Candidates, text: str, depth: int) -> list[tuple[int, float]]:
        """BM25 over ``text`` without the stop list's words (question words must not decide a match), read
        ``sparse_depth`` deep (else ``depth``, as dense); nothing when BM25 is off."""
        settings = self.deps.settings
        if not settings.sparse:
            return []
        return view.text(content_words(text) if settings.query_stop_words else text, settings.sparse_depth or depth)

    def _graph_list(self, query: str, scope: Scope, view: Candidates, depth: int) -> tuple[list[int], GraphInfo]:
        """The units the graph reaches from the query's entities, best entity score first (ties by unit id),
        that this search admits (scope, supersession, ``as_of``): at most ``depth`` row ids."""
        assert self.deps.graph is not None
        unit_scores, info = self.deps.graph.expand_units(query, scope)
        reached = self._graph_admitted(unit_scores, unit_scores, view, max(depth, GRAPH_POOL))
        return [rid for rid, _ in reached][:depth], info

    def _graph_admitted(self, unit_ids: Iterable[str], unit_scores: Mapping[str, float], view: Candidates,
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

    def _reranked(self, text: str, order: list[int]) -> tuple[list[int], dict[int, int]]:
        """``order`` with its first ``rerank_depth`` rows re-ordered by the reranker, and their new ranks."""
        m = self.deps
        if self._reranker is None or self._reranker.path != m.settings.reranker:
            self._reranker = Reranker(str(m.settings.reranker))
        head = order[: m.settings.rerank_depth]
        rows = m.store.get_rows(head)
        head = [rid for rid in head if rid in rows]  # deleted meanwhile: left out
        best = self._reranker.order(text, [search_text(rows[r].speaker, rows[r].summary) for r in head])
        new = [head[i] for i in best]
        taken = set(new)
        return new + [r for r in order if r not in taken], {rid: i for i, rid in enumerate(new, 1)}

    def _pack_fitting(
        self, query: str, qvec: Any, order: list[int], sources: Sources, scope: Scope,
        theta: float, budget: int, seq: int,
    ) -> Context | None:
        """The context of ``order``, fetching only the rows whose lines fit (None: a write interfered):
        :func:`omnimem.engine.retrieval.fitting.pack_fitting` with this retriever's caches."""
        return pack_fitting(self.deps, self.line_costs, self.rows, (self.full_text, self.raw), query, qvec, order,
                            sources, scope, theta, budget, seq)

    def _with_neighbours(
        self, candidates: list[Candidate], qvec: Any, scope: Scope, view: Candidates
    ) -> list[Candidate]:
        """Put the turns just before and after each of the best hits right after it.

        An answer often sits next to the turn that matches the question ("what
        did you paint?" / "a sunset"); on LoCoMo this lifted recall within 6,000
        tokens by 3 points. Neighbours must be searchable in the same scope.
        """
        m = self.deps
        reach, top = m.settings.neighbours, m.settings.expand_top
        present = {c.unit.id for c in candidates}
        extra: dict[str, list[Candidate]] = {}  # anchor id -> its neighbours
        frontier = [(c.unit, c.unit.id) for c in candidates[:top]]
        for _ in range(reach):
            wanted: dict[str, str] = {}  # neighbour id -> anchor id
            for unit, anchor in frontier:
                for near in (unit.links.prev_id, unit.links.next_id):
                    if near is not None and near not in present and near not in wanted:
                        wanted[near] = anchor
            if not wanted:
                break
            with self.state.lock:
                found = m.store.get_with_rids(sorted(wanted))
            frontier = []
            admitted = view.admitted([rid for rid, _ in found])  # same scope, supersession and as_of
            for rid, unit in found:
                if rid not in admitted:  # scope, supersession and as_of: admitted by the backend
                    continue
                present.add(unit.id)
                extra.setdefault(wanted[unit.id], []).append(
                    Candidate(unit, similarity(qvec, unit), frozenset({"neighbour"}), seq=rid))
                frontier.append((unit, wanted[unit.id]))
        out: list[Candidate] = []
        for cand in candidates:
            out.append(cand)
            out.extend(sorted(extra.get(cand.unit.id, []), key=lambda c: c.unit.event_time or c.unit.record_time))
        return out

    def _clip_candidates(self, query: str, k: int, view: Candidates, present: set[str], qvec: Any) -> list[Candidate]:
        """Images whose CLIP vector is near the query's, not already found by text."""
        m = self.deps
        assert m.clip is not None
        found = m.clip.search(query, k, view)
        with self.state.lock:
            rows = m.store.get_rows([rid for rid, _ in found])
        return [Candidate(rows[rid], similarity(qvec, rows[rid]), frozenset({"clip"}), seq=rid)
                for rid, _ in found if rid in rows and rows[rid].id not in present]

    def _graph_candidates(
        self, query: str, qvec: Any, scope: Scope, view: Candidates, candidates: list[Candidate]
    ) -> tuple[list[Candidate], GraphInfo]:
        """Mark hybrid hits the graph also reached; append the best graph-only units."""
        m = self.deps
        assert m.graph is not None
        unit_scores, info = m.graph.expand_units(query, scope)
        if not unit_scores:
            return candidates, info
        present = {c.unit.id for c in candidates}
        marked = [replace(c, sources=c.sources | {"graph"}) if c.unit.id in unit_scores else c for c in candidates]
        found = self._graph_admitted((uid for uid in unit_scores if uid not in present), unit_scores, view, GRAPH_POOL)
        top = max(unit_scores.values())
        ranked: list[tuple[float, MAU, int]] = []
        for rid, unit in found:
            weight = 0.5 + 0.5 * unit_scores[unit.id] / top
            ranked.append((max(similarity(qvec, unit), 0.0) * weight, unit, rid))
        ranked.sort(key=lambda r: (-r[0], r[1].id))
        added = [Candidate(u, similarity(qvec, u), frozenset({"graph"}), seq=rid)
                 for _, u, rid in ranked[: m.settings.graph_k]]
        info = replace(info, added=tuple(c.unit.id for c in added))
        return marked + added, info

    def full_text(self, unit: MAU) -> str | None:
        """Level-2 text (see :func:`omnimem.engine.retrieval.content.full_text`)."""
        return full_text(self.deps.store, unit)

    def raw(self, unit: MAU) -> RawContent | None:
        """Level-3 content: media only (a text unit's raw content is its full text, level 2)."""
        return raw_content(unit)

    def _with_raw_bytes(self, ctx: Context) -> Context:
        """Load cold-tier bytes only for the hits that reached level 3."""
        return with_raw_bytes(self.deps.store, ctx)
