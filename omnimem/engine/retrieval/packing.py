"""The packing stage: a ranking into a pyramid context under the token budget (settings: the "Packing" group).

One packer, :func:`omnimem.engine.retrieval.fitting.pack_fitting`, reads only the rows whose lines fit. What
it packs is chosen once, when the engine opens (:func:`packer_for`):

- :class:`FittingPacker`, the default: the ranking's own candidates;
- :class:`CandidatePacker`, where the settings add candidates that are not in the ranking (same-session
  neighbours, ``diversity``, CLIP images, the graph's units appended with ``graph_k``): the ranking's rows
  are read, the added candidates joined (:func:`assemble`), and each packed with the sources and score it
  came with (:class:`Given`).

:class:`ReferencePacker` packs the same candidates the plain way, every row read and packed by
:func:`omnimem.engine.retrieval.pyramid.build_context`: the tests check the packer against it
(``tests/engine/retrieval/test_fast_packing.py``); no search uses it.
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


class Given:
    """The sources and scores each candidate came with, as a hit reports them (:class:`fitting.HitSources`)."""

    def __init__(self, candidates: list[Candidate]) -> None:
        self._by_row = {c.seq: c for c in candidates}

    def of(self, rid: int) -> frozenset[str]:
        return self._by_row[rid].sources

    def explain(self, rid: int) -> tuple[float | None, dict[str, int]]:
        cand = self._by_row[rid]
        return cand.fused, dict(cand.ranks)


class FittingPacker:
    """The ranking's own candidates, reading only the rows whose lines fit."""

    def __init__(self, deps: Deps, lines: LineCosts, rows: RowCache, content: tuple[FullText, Raw]) -> None:
        self.deps, self.lines, self.rows, self.content = deps, lines, rows, content

    def pack(self, query: str, ranking: Ranking, top_k: int, theta: float, budget: int, scope: Scope) -> Context:
        with otel.stage("omnimem.search.pack", **{"omnimem.candidates": len(ranking.order)}):
            ctx = pack_fitting(self.deps, self.lines, self.rows, self.content, query, ranking.asked, ranking.order,
                               ranking.sources, scope, theta, budget, ranking.seq)
        return finished(self.deps, ctx, ranking.graph_info)


class CandidatePacker:
    """The ranking's candidates with those the settings add (neighbours, CLIP, the graph), by the one packer."""

    def __init__(self, deps: Deps, state: WriterState, candidates: CandidateStage, lines: LineCosts,
                 rows: RowCache, content: tuple[FullText, Raw]) -> None:
        self.deps, self.state, self.candidates, self.lines, self.rows = deps, state, candidates, lines, rows
        self.content = content

    def pack(self, query: str, ranking: Ranking, top_k: int, theta: float, budget: int, scope: Scope) -> Context:
        """The pyramid context of ``ranking`` with the candidates the settings add, packed into ``budget``."""
        joined, graph_info = self.assemble(query, ranking, top_k, scope)
        order = [c.seq for c in joined if c.seq is not None]
        with otel.stage("omnimem.search.pack", **{"omnimem.candidates": len(order)}):
            ctx = pack_fitting(self.deps, self.lines, self.rows, self.content, query, ranking.asked, order,
                               Given(joined), scope, theta, budget, ranking.seq)
        return finished(self.deps, ctx, graph_info)

    def assemble(self, query: str, ranking: Ranking, top_k: int, scope: Scope
                 ) -> tuple[list[Candidate], GraphInfo | None]:
        """The ranking's rows in scope, then what the settings add: diversity's order, the neighbours of the
        best, CLIP images and the graph's units; at most ``top_k`` (0: all)."""
        m = self.deps
        settings = m.settings
        order, sources, asked, view, graph_info = (ranking.order, ranking.sources, ranking.asked, ranking.view,
                                                   ranking.graph_info)
        units = m.store.get_rows(order)
        joined = []
        for rid in order:
            unit = units.get(rid)
            if unit is None or not scope.contains(unit.scope):  # deleted (or rewritten) between index and fetch
                continue
            joined.append(Candidate(unit, similarity(asked, unit), sources.of(rid), *sources.explain(rid), seq=rid))
        if settings.diversity > 0:  # one session must not fill the top alone (multi-part questions)
            joined = diversify(joined, lambda c: c.unit.scope, penalty=settings.diversity)
        if settings.neighbours and settings.expand_top:
            joined = self._with_neighbours(joined, asked, view)
        if m.clip is not None:
            joined += self._clip_candidates(query, ranking.depth, view, {c.unit.id for c in joined}, asked)
        if appends_graph(m, ranking.fused_graph):
            joined, graph_info = self._graph_candidates(query, asked, scope, view, joined)
        return (joined[:top_k] if top_k else joined), graph_info

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


class ReferencePacker:
    """The same candidates packed the plain way: every row read, packed by ``build_context`` (for tests)."""

    def __init__(self, packer: FittingPacker | CandidatePacker, state: WriterState,
                 candidates: CandidateStage) -> None:
        self.deps, self.lines, self.content = packer.deps, packer.lines, packer.content
        self.joining = CandidatePacker(packer.deps, state, candidates, packer.lines, packer.rows, packer.content)

    def pack(self, query: str, ranking: Ranking, top_k: int, theta: float, budget: int, scope: Scope) -> Context:
        settings = self.deps.settings
        joined, graph_info = self.joining.assemble(query, ranking, top_k, scope)
        full, raw = self.content
        costs = self.lines.costs([(c.seq, c.unit) for c in joined], settings.packing)
        ctx = build_context(
            query, joined, theta=theta, budget=budget, full_text=full, raw_content=raw,
            max_level=settings.max_level, packing=settings.packing, count=self.lines, costs=costs,
            whole_share=settings.whole_share, whole_top=settings.whole_top, line_words=settings.line_words,
            stamp_gap=settings.stamp_gap, elide_speakers=settings.elide_speakers, fence=settings.fence_untrusted,
            max_source_share=settings.max_source_share,
        )
        return finished(self.deps, ctx, graph_info)


def appends_graph(deps: Deps, fused_graph: bool) -> bool:
    """Whether the graph's best units are appended to the candidates (``graph_k``, the graph not fused)."""
    return deps.graph is not None and deps.settings.graph_k > 0 and not fused_graph


def packer_for(deps: Deps, state: WriterState, candidates: CandidateStage, lines: LineCosts, rows: RowCache,
               content: tuple[FullText, Raw], fused_graph: bool) -> FittingPacker | CandidatePacker:
    """The packer of an engine's searches, chosen once from its settings and models."""
    settings = deps.settings
    adds = (settings.diversity > 0 or (settings.neighbours and settings.expand_top) or deps.clip is not None
            or appends_graph(deps, fused_graph))
    if adds:
        return CandidatePacker(deps, state, candidates, lines, rows, content)
    return FittingPacker(deps, lines, rows, content)


def finished(deps: Deps, ctx: Context, graph_info: GraphInfo | None) -> Context:
    """``ctx`` with the graph's report and the cold-tier bytes of the hits that reached level 3."""
    if graph_info is not None:
        ctx = replace(ctx, graph=graph_info.to_dict())
    return with_raw_bytes(deps.store, ctx)
