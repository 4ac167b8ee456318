"""The packing stage: a ranking into a pyramid context under the token budget (settings: the "Packing" group).

Which packer a search uses is chosen once, when the engine opens (:func:`packer_for`):

- :class:`FittingPacker`, the default: only the rows whose lines fit are read, judged by their remembered
  line facts (:func:`omnimem.engine.retrieval.fitting.pack_fitting`);
- :class:`CandidatePacker`, where something adds candidates that are not in the ranking (same-session
  neighbours, ``diversity``, CLIP images, the graph's units appended with ``graph_k``): every candidate is
  fetched and packed by :func:`omnimem.engine.retrieval.pyramid.build_context`. The fitting packer falls
  back to it for one search where a write changed the store meanwhile. Both give the same context for the
  same candidates (``tests/engine/retrieval/test_fast_packing.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from omnimem import otel
from omnimem.engine.deps import Deps
from omnimem.engine.retrieval.candidates import GRAPH_POOL, CandidateStage
from omnimem.engine.retrieval.content import with_raw_bytes
from omnimem.engine.retrieval.fitting import FullText, Raw, pack_fitting
from omnimem.engine.retrieval.line_costs import LineCosts
from omnimem.engine.retrieval.pyramid import Candidate, build_context
from omnimem.engine.retrieval.ranking import Ranking, Sources, similarity
from omnimem.engine.retrieval.row_cache import RowCache
from omnimem.engine.state import WriterState
from omnimem.fusion import diversify
from omnimem.mau import MAU, Scope
from omnimem.results import Context
from omnimem.store.base import Candidates

if TYPE_CHECKING:
    from omnimem.graph.engine import GraphInfo

Packer = Callable[[str, Ranking, int, float, int, Scope], Context]


class CandidatePacker:
    """Every candidate fetched, neighbours, CLIP and graph candidates added, packed by ``build_context``."""

    def __init__(self, deps: Deps, state: WriterState, candidates: CandidateStage, lines: LineCosts,
                 content: tuple[FullText, Raw]) -> None:
        self.deps, self.state, self.candidates, self.lines = deps, state, candidates, lines
        self.full_text, self.raw = content

    def pack(self, query: str, ranking: Ranking, top_k: int, theta: float, budget: int, scope: Scope) -> Context:
        """The pyramid context of ``ranking`` with the candidates the settings add, packed into ``budget``."""
        m = self.deps
        settings = m.settings
        order, sources, asked, view, graph_info = (ranking.order, ranking.sources, ranking.asked, ranking.view,
                                                   ranking.graph_info)
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
            candidates = self._with_neighbours(candidates, asked, view)
        if m.clip is not None:
            candidates += self._clip_candidates(query, ranking.depth, view, {c.unit.id for c in candidates}, asked)
        if appends_graph(m, ranking.fused_graph):
            candidates, graph_info = self._graph_candidates(query, asked, scope, view, candidates)
        if top_k:  # at most top_k hits, whatever neighbours, CLIP and the graph added
            candidates = candidates[:top_k]
        costs = self.lines.costs([(rids.get(c.unit.id), c.unit) for c in candidates], settings.packing)
        with otel.stage("omnimem.search.pack", **{"omnimem.candidates": len(candidates)}):
            ctx = build_context(
                query, candidates, theta=theta, budget=budget, full_text=self.full_text, raw_content=self.raw,
                max_level=settings.max_level, packing=settings.packing, count=self.lines, costs=costs,
                whole_share=settings.whole_share, whole_top=settings.whole_top, line_words=settings.line_words,
                stamp_gap=settings.stamp_gap, elide_speakers=settings.elide_speakers, fence=settings.fence_untrusted,
                max_source_share=settings.max_source_share,
            )
        return finished(m, ctx, graph_info)

    def _with_neighbours(self, candidates: list[Candidate], qvec: Any, view: Candidates) -> list[Candidate]:
        """Put the turns just before and after each of the best hits right after it.

        An answer often sits next to the turn that matches the question ("what did you paint?" / "a sunset").
        Neighbours must be searchable in the same scope.
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
        found = self.candidates.graph_admitted((uid for uid in unit_scores if uid not in present), unit_scores,
                                               view, GRAPH_POOL)
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


class FittingPacker:
    """The ranking's own candidates, reading only the rows whose lines fit; the candidate packer where a
    write interfered."""

    def __init__(self, deps: Deps, lines: LineCosts, rows: RowCache, content: tuple[FullText, Raw],
                 fallback: CandidatePacker) -> None:
        self.deps, self.lines, self.rows, self.content, self.fallback = deps, lines, rows, content, fallback

    def pack(self, query: str, ranking: Ranking, top_k: int, theta: float, budget: int, scope: Scope) -> Context:
        with otel.stage("omnimem.search.pack", **{"omnimem.candidates": len(ranking.order)}):
            ctx = self.fit(query, ranking.asked, ranking.order, ranking.sources, scope, theta, budget, ranking.seq)
        if ctx is None:  # the store changed meanwhile: this search packs every candidate
            return self.fallback.pack(query, ranking, top_k, theta, budget, scope)
        return finished(self.deps, ctx, ranking.graph_info)

    def fit(self, query: str, qvec: Any, order: list[int], sources: Sources, scope: Scope, theta: float,
            budget: int, seq: int) -> Context | None:
        """The context of ``order`` from the rows that fit (None: a write interfered)."""
        return pack_fitting(self.deps, self.lines, self.rows, self.content, query, qvec, order, sources, scope,
                            theta, budget, seq)


def appends_graph(deps: Deps, fused_graph: bool) -> bool:
    """Whether the graph's best units are appended to the candidates (``graph_k``, the graph not fused)."""
    return deps.graph is not None and deps.settings.graph_k > 0 and not fused_graph


def packer_for(deps: Deps, state: WriterState, candidates: CandidateStage, lines: LineCosts, rows: RowCache,
               content: tuple[FullText, Raw], fused_graph: bool) -> FittingPacker | CandidatePacker:
    """The packer of an engine's searches, chosen once from its settings and models."""
    settings = deps.settings
    every = CandidatePacker(deps, state, candidates, lines, content)
    adds = (settings.diversity > 0 or (settings.neighbours and settings.expand_top) or deps.clip is not None
            or appends_graph(deps, fused_graph))
    return every if adds else FittingPacker(deps, lines, rows, content, every)


def finished(deps: Deps, ctx: Context, graph_info: GraphInfo | None) -> Context:
    """``ctx`` with the graph's report and the cold-tier bytes of the hits that reached level 3."""
    if graph_info is not None:
        ctx = replace(ctx, graph=graph_info.to_dict())
    return with_raw_bytes(deps.store, ctx)
