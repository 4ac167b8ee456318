"""Retrieval: hybrid search, CLIP and graph candidates, the pyramid and raw content.

The facade validates arguments and hands over here; this module holds the
order of operations of a search. Searches take the engine's lock only to
catch up with other processes' writes; the index searches, row fetches,
embedding and packing run outside it, so searches run in parallel.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from copy import copy
from dataclasses import dataclass, replace
from functools import cache, partial
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

import numpy as np

from omnimem import otel
from omnimem.errors import NotFoundError
from omnimem.fusion import diversify, rrf_order, union_merge
from omnimem.embed.base import embed_queries
from omnimem.mau import MAU, Modality, Scope, search_text
from omnimem.engine.retrieval.depth import DEEPER_ROUNDS, deeper, first_depth
from omnimem.engine.retrieval.learnt import SINK_DEPTH, features, learnt_order, load_ranker
from omnimem.engine.retrieval.rerank import Reranker
from omnimem.engine.retrieval.signals import (FactCache, Signal, SpeakerMemo, bounded, feedback_vector,
                                              named_speakers, signals, wanted, without_names)
from omnimem.engine.retrieval.line_costs import LineCosts
from omnimem.engine.retrieval.row_cache import RowCache
from omnimem.engine.retrieval.shares import shares_for
from omnimem.context import FENCE_RULE
from omnimem.engine.retrieval.pyramid import (Candidate, Context, Hit, RawContent, WholeLines, brief, build_context,
                                              finish_context, fit_plan, line_of)
from omnimem.tokens import count_joined, raw_tokens
from omnimem.text import content_words
from omnimem.engine.parts import Parts
from omnimem.store.base import Candidates, SearchFilter, Store

if TYPE_CHECKING:
    from omnimem.graph.engine import GraphInfo


STAMPED = "day-stamped"  # the line-cost cache's key for a day-packed line written after its time of day
GRAPH_POOL = 500  # the graph's best units fetched per search, at most (more when the retrievers read deeper)
SIDE_THREADS = 4  # BM25 queries run beside their search's dense one at once, per process (more wait their turn)


@cache  # a second pool made in a race would hold no thread: threads start with the first query
def _side() -> ThreadPoolExecutor:
    """The threads a search's BM25 query runs in beside its dense one, where the backend says so."""
    return ThreadPoolExecutor(SIDE_THREADS, thread_name_prefix="omnimem-search-text")


class Retriever:
    """Runs searches against one engine's store and indexes."""

    def __init__(self, parts: Parts) -> None:
        self.parts = parts
        self.line_costs = LineCosts(parts.count_tokens, words=parts.settings.line_words,
                                    elide=bool(parts.settings.elide_speakers) and parts.settings.packing == "day",
                                    fence=parts.settings.fence_untrusted)
        self._reranker: Reranker | None = None
        # what the ranking signals read of each row (a unit's stated words only when that signal is on)
        learnt = parts.settings.ranking != "rules"  # the learnt ranking reads every signal's facts
        self.facts = FactCache(statements=learnt or parts.settings.statement_weight > 0,
                               replies=learnt or parts.settings.reply_weight > 0)
        self.ranker = load_ranker(parts.settings.ranking) if learnt else None
        # a ranker's training reads each head's features here: (query, head, features, facts)
        self.ranking_sink: Callable[[str, list[int], Any, Mapping[int, Any]], None] | None = None
        self.speakers = SpeakerMemo()  # the speakers seen in each scope's heads: names are stripped up front
        self.rows = RowCache()  # units read since the store last changed (packing reads mostly the same rows)

    def search(
        self, text: str, k: int, th: float, limit: int, scope: Scope, include_superseded: bool, when: datetime | None,
        now: datetime | None = None, min_trust: str | None = None,
    ) -> Context:
        """Dense + BM25 fused, same-session neighbours, CLIP and graph candidates, then the pyramid.

        ``now`` (default: the wall clock) is what relative times in the query ("last week") are read against;
        ``min_trust`` admits only units at least that trusted.
        """
        ranking = self.rank(text, k, limit, scope, include_superseded, when, now, min_trust=min_trust)
        return self.filled(self.pack(text, ranking, k, th, limit, scope), ranking, text, k, limit, scope,
                           include_superseded, when, now, lambda deeper: self.pack(text, deeper, k, th, limit, scope),
                           min_trust=min_trust)

    def filled(
        self, ctx: Context, ranking: Ranking, text: str, k: int, limit: int, scope: Scope, include_superseded: bool,
        when: datetime | None, now: datetime | None, pack: Callable[[Ranking], Context], min_trust: str | None = None,
    ) -> Context:
        """``ctx``, or where the depth and not the budget bounded it (short messages run out of candidates
        first: :mod:`omnimem.engine.retrieval.depth`), ``text`` ranked again, deeper, with ``ranking``'s
        vectors, and packed by ``pack``, at most ``DEEPER_ROUNDS`` times."""
        for _ in range(DEEPER_ROUNDS):
            depth = deeper(self.parts.settings, ctx, ranking.depth, ranking.full, k, limit)
            if not depth:
                break
            ranking = self.rank(text, k, limit, scope, include_superseded, when, now, depth=depth,
                                vectors=ranking.vectors, again=True, min_trust=min_trust)
            ctx = pack(ranking)
        return ctx

    def rank(
        self, text: str, k: int, limit: int, scope: Scope, include_superseded: bool, when: datetime | None,
        now: datetime | None = None, *, depth: int = 0, vectors: tuple[Any, Any] | None = None, again: bool = False,
        min_trust: str | None = None,
    ) -> Ranking:
        """The fused ranking of one query (dense, BM25 and the signals), before anything is packed.

        ``depth`` (0: the settings') is how deep each retriever is read; ``vectors`` the query's vectors from
        an earlier ranking of the same query (:attr:`Ranking.vectors`), not embedded again. ``again``: a later
        ranking of a search already under way, which ``close`` waits for (``Parts.reading``): it goes on even
        when ``close`` began meanwhile, where a new search is refused.
        """
        m = self.parts
        settings = m.settings
        # ``k`` bounds the hits (0: as many as the budget holds); each retriever is read deep enough to fill
        # the budget, or, in the paper's union fusion, to ``depth`` (default: k, else 20) per retriever
        union = settings.fusion == "union"
        depth = depth or first_depth(settings, k, limit)
        merge = union_merge if settings.fusion == "union" else partial(  # rrf_merge's order, in numpy
            rrf_order, k=settings.rrf_k, sparse_weight=settings.sparse_weight)
        # a query naming a speaker seen before in this scope is searched without the name at once (the name
        # is a field, :meth:`_signals`), so it is embedded and searched once, not twice; checked there
        fielded = not union and settings.speaker_field and settings.speaker_weight > 0
        searched = without_names(text, named_speakers(text, self.speakers.get(scope))) if fielded else text
        # a hit's score is its similarity to the query as asked (names and all), whatever dense searched:
        # ``asked`` is that vector, ``qvec`` the one dense ranks by (the same one unless names are stripped)
        if vectors is not None:
            qvec, asked = vectors
        else:
            with otel.stage("omnimem.search.embed"):
                qvec = embed_queries(m.embedder, [searched if settings.dense_without_names else text])[0]
                asked = qvec if searched == text or not settings.dense_without_names else \
                    embed_queries(m.embedder, [text])[0]
        first = (qvec, asked)
        with m.lock:  # short: catch up with other processes' writes (in-process writers hold the lock
            if not again:  # while they store and index a batch, so this never indexes half a batch)
                m.check_open()
            m.search.sync()
            seq = m.store.seq()
        # no engine lock from here: the indexes let searches run together (FAISS and numpy release the GIL)
        # and the store guards its own connection
        view = m.search.within(SearchFilter(scope, include_superseded, when, min_trust))  # filtered in the backend
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
                    text, searched, scope, qvec, asked, view, depth, dense, sparse, order,
                    now or datetime.now(timezone.utc), fused_graph)
        reranked: dict[int, int] = {}
        if settings.reranker:  # a cross-encoder re-orders the best fused candidates (off by default)
            order, reranked = self._reranked(text, order)
        if k:
            order = order[:k]
        sources = Sources([r for r, _ in dense], [r for r, _ in sparse],
                          None if settings.fusion == "union" else (settings.rrf_k, settings.sparse_weight), reranked,
                          extra)
        return Ranking(order, sources, asked, view, depth, seq, graph_info, fused_graph, full, first)

    def pack(self, text: str, ranking: Ranking, k: int, th: float, limit: int, scope: Scope) -> Context:
        """The pyramid context of a ranking: neighbours, CLIP and graph candidates added, packed into ``limit``."""
        m = self.parts
        settings = m.settings
        order, sources, asked, view, seq, graph_info = (ranking.order, ranking.sources, ranking.asked, ranking.view,
                                                        ranking.seq, ranking.graph_info)
        fused_graph, depth = ranking.fused_graph, ranking.depth
        appended_graph = m.graph is not None and settings.graph_k > 0 and not fused_graph
        plain = not (settings.diversity > 0 or (settings.neighbours and settings.expand_top) or m.clip is not None
                     or appended_graph)
        if plain:  # nothing but packing reads the candidates: fetch only the rows that fit
            with otel.stage("omnimem.search.pack", **{"omnimem.candidates": len(order)}):
                ctx = self._pack_fitting(text, asked, order, sources, scope, th, limit, seq)
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
            candidates += self._clip_candidates(text, depth, view, {c.unit.id for c in candidates}, asked)
        if appended_graph:
            candidates, graph_info = self._graph_candidates(text, asked, scope, view, candidates)
        if k:  # at most k hits, whatever neighbours, CLIP and the graph added
            candidates = candidates[:k]
        costs = self.line_costs.costs([(rids.get(c.unit.id), c.unit) for c in candidates], settings.packing)
        with otel.stage("omnimem.search.pack", **{"omnimem.candidates": len(candidates)}):
            ctx = build_context(
                text, candidates, theta=th, budget=limit, full_text=self.full_text, raw_content=self.raw,
                max_level=settings.max_level, packing=settings.packing, count=self.line_costs, costs=costs,
                whole_share=settings.whole_share, whole_top=settings.whole_top, line_words=settings.line_words,
                stamp_gap=settings.stamp_gap, elide_speakers=settings.elide_speakers, fence=settings.fence_untrusted,
                max_source_share=settings.max_source_share,
            )
        if graph_info is not None:
            ctx = replace(ctx, graph=graph_info.to_dict())
        return self._with_raw_bytes(ctx)

    def _signals(
        self, text: str, searched: str, scope: Scope, qvec: Any, asked: Any, view: Candidates, depth: int,
        dense: list[tuple[int, float]], sparse: list[tuple[int, float]], order: list[int], now: datetime,
        fused_graph: bool = False,
    ) -> tuple[Any, list[int], list[tuple[int, float]], list[tuple[int, float]], list[Signal], GraphInfo | None]:
        """Speaker names as a field, pseudo-relevance feedback and the ranking signals over the fused head.

        ``searched`` is what the first pass searched: the query, or the query without the names of speakers
        seen in ``scope`` before; ``asked`` the vector of ``text``. Returns the new (query vector, order, dense,
        sparse, signals): with a speaker matched as the field, the vector dense ranks by is the rest of the
        query's (with ``dense_without_names``; else ``asked``, and only BM25 searches the rest). Hits are
        scored against ``asked`` either way. With ``fused_graph`` the graph's units are one more list
        (graph-only units included), and the graph's report comes back too.
        """
        m = self.parts
        settings = m.settings
        fuse = partial(rrf_order, k=settings.rrf_k, sparse_weight=settings.sparse_weight)
        rows = self.facts.get(order[: settings.signal_depth], m.store.get_rows)
        speakers = [f.speaker for f in rows.values()]
        if settings.speaker_weight > 0:
            self.speakers.learn(scope, speakers)
        named = named_speakers(text, speakers) if settings.speaker_weight > 0 else set()
        rest = without_names(text, named) if settings.speaker_field else text
        if rest != searched:  # the head's speakers say another text is to be searched: the query without the
            # names it holds (the speaker signal below makes them a field), or the query itself
            if settings.dense_without_names:  # else dense read the query as asked already
                with otel.stage("omnimem.search.embed"):
                    qvec = asked if rest == text else embed_queries(m.embedder, [rest])[0]
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
            extra = signals(text, head, rows, fused, settings, now, named)
        info = None
        if fused_graph:
            graph, info = self._graph_list(text, scope, view, depth)
            if graph:
                extra.append(Signal("graph", graph, settings.graph_weight))
        if extra:  # a signal re-orders near ties, never buries a clear match of both retrievers (signal_margin)
            lifted = fuse([r for r, _ in dense], [r for r, _ in sparse], extra=[(x.rids, x.weight) for x in extra])
            order = bounded(lifted, order, dense, sparse, extra, settings)
        if self.ranker is not None or self.ranking_sink is not None:  # the learnt ranking re-orders the head
            head = order[: self.ranker.depth if self.ranker is not None else SINK_DEPTH]
            facts = self.facts.get(head, m.store.get_rows)
            x = features(text, head, facts, dense, sparse, settings, now, named)
            if self.ranking_sink is not None:
                self.ranking_sink(text, head, x, facts)
            if self.ranker is not None:  # like a signal, the model never buries a clear match of both retrievers
                moved = learnt_order(order, self.ranker, x)
                order = bounded(moved, order, dense, sparse, [Signal("learnt", head, 1.0), *extra], settings)
        return qvec, order, dense, sparse, extra, info

    def _lists(self, view: Candidates, qvec: Any, text: str, depth: int
               ) -> tuple[list[tuple[int, float]], list[tuple[int, float]]]:
        """The first pass's dense and BM25 lists; side by side where each waits on a database server."""
        settings = self.parts.settings
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
        settings = self.parts.settings
        if not settings.sparse:
            return []
        return view.text(content_words(text) if settings.query_stop_words else text, settings.sparse_depth or depth)

    def _graph_list(self, query: str, scope: Scope, view: Candidates, depth: int) -> tuple[list[int], GraphInfo]:
        """The units the graph reaches from the query's entities, best entity score first (ties by unit id),
        that this search admits (scope, supersession, ``as_of``): at most ``depth`` row ids."""
        assert self.parts.graph is not None
        unit_scores, info = self.parts.graph.expand_units(query, scope)
        reached = self._graph_admitted(unit_scores, unit_scores, view, max(depth, GRAPH_POOL))
        return [rid for rid, _ in reached][:depth], info

    def _graph_admitted(self, unit_ids: Iterable[str], unit_scores: Mapping[str, float], view: Candidates,
                        limit: int) -> list[tuple[int, MAU]]:
        """The best ``limit`` of ``unit_ids`` by graph score (ties by unit id), fetched, that this search admits
        (scope, supersession and ``as_of`` at once), in that order."""
        pool = sorted(unit_ids, key=lambda u: (-unit_scores[u], u))[:limit]
        if not pool:
            return []
        with self.parts.lock:
            found = self.parts.store.get_with_rids(pool)
        admitted = view.admitted([rid for rid, _ in found])
        position = {uid: i for i, uid in enumerate(pool)}
        return sorted(((rid, unit) for rid, unit in found if rid in admitted), key=lambda r: position[r[1].id])

    def _reranked(self, text: str, order: list[int]) -> tuple[list[int], dict[int, int]]:
        """``order`` with its first ``rerank_depth`` rows re-ordered by the reranker, and their new ranks."""
        m = self.parts
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
        self, text: str, qvec: Any, order: list[int], sources: Sources, scope: Scope,
        th: float, limit: int, seq: int,
    ) -> Context | None:
        """The context of ``order``, fetching only the rows whose lines fit (None: a write interfered).

        Rows seen before are judged by their remembered line facts
        (:mod:`omnimem.engine.retrieval.line_costs`), the others fetched and learnt. Only the
        rows that fit at level 1 are then fetched and made hits, with their
        ranks among all candidates, which gives the same context as packing
        every candidate (``tests/test_retrieval_identical.py``). The rendered
        context is counted from its lines' remembered counts
        (:func:`omnimem.tokens.count_joined`) instead of encoded again. If the
        store changed meanwhile (a remembered row may be gone), the caller
        packs the slow way.
        """
        m = self.parts
        packing = m.settings.packing
        lines = self.line_costs
        facts = lines.known(order, packing)
        read = partial(self.rows.read, seq=seq, fetch=m.store.get_rows)  # rows read since the last write: kept
        units = read([rid for rid in order if rid not in facts])
        facts.update(zip(units, lines.learn(list(units.items()), packing)))
        if scope.is_empty():  # the index searches admitted only rows in scope; this checks rows read since
            ranked = [rid for rid in order if rid in facts]
        else:
            ranked = [rid for rid in order if rid in facts and scope.contains(facts[rid].scope)]
        known = [facts[rid] for rid in ranked]
        grouped = packing != "line"
        day = packing == "day"
        talk = day and m.settings.elide_speakers
        line = line_of(packing, m.settings.fence_untrusted)
        share = m.settings.whole_share if m.settings.max_level >= 2 else 0.0
        allowance = int(limit * share)
        top = m.settings.whole_top if m.settings.max_level >= 2 else 0
        if allowance or top:  # the best few may come whole: fetch the rows that can be among them at once
            head, spent = [], 0
            for i, (rid, fact) in enumerate(zip(ranked, known)):
                if spent >= allowance and i >= top:
                    break
                if not fact.short:  # a short text's line is its whole: it is never offered whole
                    head.append(rid)
                spent += fact.cost + 1
            with otel.stage("omnimem.search.rows"):
                units.update(read([rid for rid in head if rid not in units]))

        def unit_at(i: int) -> MAU:
            rid = ranked[i]
            if rid not in units:
                units.update(read([rid]))
            return units[rid] if rid in units else _gone(rid)

        wholes = WholeLines(unit_at, self.full_text, line, lines)
        fence = m.settings.fence_untrusted
        fenced = [f.fenced for f in known] if fence else None
        rule_cost = lines.count(FENCE_RULE) if fenced is not None and any(fenced) else 0
        shares = shares_for(limit, m.settings.max_source_share)
        try:
            with otel.stage("omnimem.search.fit"):
                plan = fit_plan([f.cost for f in known], [f.key for f in known] if grouped else None,
                                [f.header_cost for f in known] if grouped else None,
                                [f.minute for f in known] if day else None,
                                [f.stamp_cost for f in known] if day else None, budget=limit,
                                whole=(lambda i: None if known[i].short else wholes.cost(i)) if allowance or top
                                else None, allowance=allowance, top=top,
                                gap=m.settings.stamp_gap, speakers=[f.speaker for f in known] if talk else None,
                                saves=[f.save for f in known] if talk else None,
                                orders=[f.order for f in known] if talk else None,
                                times=[f.when for f in known] if talk == "auto" else None, fenced=fenced,
                                rule_cost=rule_cost, shares=shares,
                                sources=None if shares is None else [f.capped for f in known])
        except _Gone:
            return None
        enter, used = plan.enter, plan.used
        fitting = [rid for rid, fits in zip(ranked, enter) if fits]
        with otel.stage("omnimem.search.rows"):  # the rows that fit, not read yet
            units.update(read([rid for rid in fitting if rid not in units]))
        if any(rid not in units for rid in fitting) or m.store.seq() != seq:
            return None
        stale = [rid for rid in fitting if units[rid].trust != facts[rid].trust]
        if stale:  # an admin changed their trust since their lines were remembered: packed again, the slow way
            lines.forget(stale)
            return None
        self.rows.keep(seq, units)  # every row was read while the store stood at ``seq``
        hits: list[Hit] = []
        dropped = [fact.unit_id for fact, fits in zip(known, enter) if not fits]
        summary_lines: list[tuple[int, str]] = []  # (row id, level-1 line) of the hits not shown whole
        deeper = m.settings.max_level >= 2
        for i in (i for i, fits in enumerate(enter) if fits):  # a hit's work, for the lines that fit only
            rid, fact = ranked[i], known[i]
            unit = units[rid]
            score = similarity(qvec, unit)
            if i in plan.whole:
                level, (shown, cost) = 2, wholes.lines[i]
            else:  # the line its cost was counted for (line_costs: the same line_words)
                shown, cost = lines.line(rid, unit, packing), fact.cost
                summary_lines.append((rid, shown))
                # a short text's full text is its summary: level 2 costs nothing more, so it is given here
                # (what finish_context's level-2 step would give it, since a free upgrade always fits)
                level = 2 if deeper and score >= th and fact.short else 1
            hits.append(Hit(unit, score, level, i + 1, sources.of(rid), shown, cost, None,
                            *sources.explain(rid), seq=rid))
        breaks = dict(zip([text for _, text in summary_lines], lines.with_breaks(summary_lines, packing)))
        # day packing writes a line as "<time of day> <line>" where the chat resumes: that piece is remembered
        # per row too (its stamp is the row's own, without a space), counted the first time it is rendered
        rows_of = {text: rid for rid, text in summary_lines} if day else {}
        # (a line that goes on from its speaker without the name, elide_speakers: remembered by its text)
        counted = lines.by_text if talk else lines

        def with_break(piece: str) -> int:
            known_cost = breaks.get(piece)
            if known_cost is not None:
                return known_cost
            if rows_of:
                stamp, _, text = piece.partition(" ")
                rid = rows_of.get(text)
                if rid is not None and facts[rid].stamp == stamp:
                    return lines.with_breaks([(rid, piece)], STAMPED)[0]
            return counted(piece + "\n")

        with otel.stage("omnimem.search.finish"):
            return finish_context(
                text, hits, used, len(ranked), dropped, theta=th, budget=limit, full_text=self.full_text,
                raw_content=self.raw, max_level=m.settings.max_level, packing=packing, count=lines,
                measure=lambda ctx: count_joined(ctx.lines(), with_break, lines.count), stamp_gap=m.settings.stamp_gap,
                elide_speakers=m.settings.elide_speakers, fence=fence, shares=shares,
            )

    def _with_neighbours(
        self, candidates: list[Candidate], qvec: Any, scope: Scope, view: Candidates
    ) -> list[Candidate]:
        """Put the turns just before and after each of the best hits right after it.

        An answer often sits next to the turn that matches the question ("what
        did you paint?" / "a sunset"); on LoCoMo this lifted recall within 6,000
        tokens by 3 points. Neighbours must be searchable in the same scope.
        """
        m = self.parts
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
            with m.lock:
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
        m = self.parts
        assert m.clip is not None
        found = m.clip.search(query, k, view)
        with m.lock:
            rows = m.store.get_rows([rid for rid, _ in found])
        return [Candidate(rows[rid], similarity(qvec, rows[rid]), frozenset({"clip"}), seq=rid)
                for rid, _ in found if rid in rows and rows[rid].id not in present]

    def _graph_candidates(
        self, query: str, qvec: Any, scope: Scope, view: Candidates, candidates: list[Candidate]
    ) -> tuple[list[Candidate], GraphInfo]:
        """Mark hybrid hits the graph also reached; append the best graph-only units."""
        m = self.parts
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
        """Level-2 text (see :func:`full_text`)."""
        return full_text(self.parts.store, unit)

    def raw(self, unit: MAU) -> RawContent | None:
        """Level-3 content: media only (a text unit's raw content is its full text, level 2)."""
        if unit.raw_ref is None or unit.modality is Modality.TEXT:
            return None
        meta = unit.metadata
        mime = str(meta.get("mime", "application/octet-stream"))
        if unit.modality is Modality.IMAGE:
            label = f"<image {mime} {meta.get('width')}x{meta.get('height')} ref={unit.raw_ref[:12]}>"
        else:
            label = f"<audio {mime} {meta.get('start_s')}-{meta.get('end_s')}s ref={unit.raw_ref[:12]}>"
        return RawContent(label, mime, None, raw_tokens(unit.modality, meta))

    def _with_raw_bytes(self, ctx: Context) -> Context:
        """Load cold-tier bytes only for the hits that reached level 3."""
        m = self.parts
        if not any(h.level == 3 for h in ctx.hits):
            return ctx
        hits = tuple(
            replace(h, raw=replace(h.raw, data=_read_or_none(m.store, h.unit.raw_ref)))
            if h.level == 3 and h.raw is not None and h.unit.raw_ref else h
            for h in ctx.hits
        )
        return replace(ctx, hits=hits)


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


class _Gone(Exception):
    """A row packing wanted was deleted meanwhile: the caller packs the slow way."""


def _gone(rid: int) -> MAU:
    raise _Gone(rid)


def full_text(store: Store, unit: MAU) -> str | None:
    """Level-2 text: the full text of a long unit (cold tier), a transcript, or the summary."""
    if unit.modality is not Modality.TEXT:
        return str(unit.metadata.get("transcript") or unit.summary)
    if unit.raw_ref is None:
        return unit.summary
    try:
        return store.read_raw(unit.raw_ref).decode("utf-8")
    except NotFoundError:  # forgotten by another thread or process during this search: stays at level 1
        return None


def _read_or_none(store: Store, ref: str) -> bytes | None:
    """Cold-tier bytes, or None when a concurrent forget removed them mid-search (the label stays)."""
    try:
        return store.read_raw(ref)
    except NotFoundError:
        return None


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
