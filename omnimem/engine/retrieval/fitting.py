"""The one packer: a ranking's context from remembered line facts, reading only the rows that fit.

Every search packs here (:mod:`omnimem.engine.retrieval.packing`): the ranking's own candidates, or the
candidates the settings add (neighbours, CLIP images, the graph's units) with the sources and scores each
came with. Packing every candidate's row by :func:`omnimem.engine.retrieval.pyramid.build_context` gives the
same context (``tests/engine/retrieval/test_fast_packing.py``); that is kept as the reference the tests
check this against. A write meanwhile (a row deleted, its trust changed) never fails a search: the rows
gone are left out, the changed ones counted again, and the fit planned again.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import partial
from typing import Any, Protocol

from omnimem import otel
from omnimem.context import FENCE_RULE
from omnimem.engine.deps import Deps
from omnimem.engine.retrieval.line_costs import LineCosts, LineFacts
from omnimem.results import Context, Hit, RawContent
from omnimem.engine.retrieval.pyramid import FitPlan, WholeLines, finish_context, fit_plan, line_of
from omnimem.engine.retrieval.ranking import similarity
from omnimem.engine.retrieval.row_cache import RowCache
from omnimem.engine.retrieval.shares import shares_for
from omnimem.mau import MAU, Scope
from omnimem.tokens import count_joined

STAMPED = "day-stamped"  # the line-cost cache's key for a day-packed line written after its time of day

FullText = Callable[[MAU], str | None]  # a unit's level-2 text
Raw = Callable[[MAU], RawContent | None]  # a unit's level-3 content


class HitSources(Protocol):
    """What a hit says of where it came from: :class:`~omnimem.engine.retrieval.ranking.Sources`, or the
    sources each added candidate came with (:class:`omnimem.engine.retrieval.packing.Given`)."""

    def of(self, rid: int) -> frozenset[str]: ...

    def explain(self, rid: int) -> tuple[float | None, dict[str, int]]: ...


def pack_fitting(
    deps: Deps, lines: LineCosts, rows: RowCache, content: tuple[FullText, Raw], query: str, qvec: Any,
    order: list[int], sources: HitSources, scope: Scope, theta: float, budget: int, seq: int,
) -> Context:
    """The context of ``order``, fetching only the rows whose lines fit.

    Rows seen before are judged by their remembered line facts
    (:mod:`omnimem.engine.retrieval.line_costs`), the others fetched and learnt. Only the
    rows that fit at level 1 are then fetched and made hits, with their
    ranks among all candidates, which gives the same context as packing
    every candidate (``tests/engine/retrieval/test_fast_packing.py``). The rendered
    context is counted from its lines' remembered counts
    (:func:`omnimem.tokens.count_joined`) instead of encoded again. Rows read are remembered
    (:class:`RowCache`) only when the store did not change meanwhile.
    """
    m = deps
    packing = m.settings.packing
    facts = lines.known(order, packing)
    read: Callable[[list[int]], Mapping[int, MAU]] = partial(rows.read, seq=seq, fetch=m.store.get_rows)
    units = dict(read([rid for rid in order if rid not in facts]))  # rows read since the last write: kept
    facts.update(zip(units, lines.learn(list(units.items()), packing)))
    fit = _Fit(deps, lines, content, facts, units, order, scope, budget)
    moved, plan = False, None
    for _ in range(2 * len(order) + 2):  # each pass after the first leaves out a row gone or counts a changed one
        plan = fit.plan(read)
        if plan is None:  # a row a whole line needed is gone
            continue
        fitting = [rid for rid, fits in zip(fit.ranked, plan.enter) if fits]
        with otel.stage("omnimem.search.rows"):  # the rows that fit, not read yet
            units.update(read([rid for rid in fitting if rid not in units]))
        if not moved and m.store.seq() != seq:  # a write meanwhile: remembered rows may be gone or changed
            moved, read = True, m.store.get_rows
            fresh = read(fitting)
            for rid in fitting:
                units.pop(rid, None)
            units.update(fresh)
        if fit.settle(fitting):
            break
        plan = None
    if plan is None:  # unreachable: every pass that does not settle leaves out or re-counts a row of ``order``
        raise RuntimeError("packing did not settle")
    if not moved:
        rows.keep(seq, units)  # every row was read while the store stood at ``seq``
    return _hits(fit, plan, sources, qvec, query, theta, budget)


class _Fit:
    """The facts of one packing: the rows in scope that are left, and the plan of what fits."""

    def __init__(self, deps: Deps, lines: LineCosts, content: tuple[FullText, Raw], facts: dict[int, LineFacts],
                 units: dict[int, MAU], order: list[int], scope: Scope, budget: int) -> None:
        self.deps, self.lines, self.content, self.facts, self.units = deps, lines, content, facts, units
        self.order, self.scope, self.budget = order, scope, budget
        self.left: set[int] = set()  # rows gone from the store meanwhile
        self.ranked: list[int] = []
        self.known: list[LineFacts] = []
        self.wholes: WholeLines | None = None

    def plan(self, read: Callable[[list[int]], Mapping[int, MAU]]) -> FitPlan | None:
        """Which lines enter (None: a row a whole line needed was gone, and is left out now)."""
        m, facts, units, scope = self.deps, self.facts, self.units, self.scope
        settings = m.settings
        packing = settings.packing
        if scope.is_empty():  # the index searches admitted only rows in scope; this checks rows read since
            self.ranked = [rid for rid in self.order if rid in facts and rid not in self.left]
        else:
            self.ranked = [rid for rid in self.order if rid in facts and rid not in self.left
                           and scope.contains(facts[rid].scope)]
        ranked = self.ranked
        known = self.known = [facts[rid] for rid in ranked]
        grouped = packing != "line"
        day = packing == "day"
        talk = day and settings.elide_speakers
        line = line_of(packing, settings.fence_untrusted)
        share = settings.whole_share if settings.max_level >= 2 else 0.0
        allowance = int(self.budget * share)
        top = settings.whole_top if settings.max_level >= 2 else 0
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

        full, _ = self.content
        wholes = self.wholes = WholeLines(unit_at, full, line, self.lines)
        fence = settings.fence_untrusted
        fenced = [f.fenced for f in known] if fence else None
        rule_cost = self.lines.count(FENCE_RULE) if fenced is not None and any(fenced) else 0
        shares = shares_for(self.budget, settings.max_source_share)
        try:
            with otel.stage("omnimem.search.fit"):
                return fit_plan([f.cost for f in known], [f.key for f in known] if grouped else None,
                                [f.header_cost for f in known] if grouped else None,
                                [f.minute for f in known] if day else None,
                                [f.stamp_cost for f in known] if day else None, budget=self.budget,
                                whole=(lambda i: None if known[i].short else wholes.cost(i)) if allowance or top
                                else None, allowance=allowance, top=top,
                                gap=settings.stamp_gap, speakers=[f.speaker for f in known] if talk else None,
                                saves=[f.save for f in known] if talk else None,
                                orders=[f.order for f in known] if talk else None,
                                times=[f.when for f in known] if talk == "auto" else None, fenced=fenced,
                                rule_cost=rule_cost, shares=shares,
                                sources=None if shares is None else [f.capped for f in known])
        except _Gone as gone:
            self.left.add(gone.args[0])
            return None

    def settle(self, fitting: list[int]) -> bool:
        """Whether every row that fits is as its facts say; else the rows gone are left out and the rows
        whose trust changed (an admin's, meanwhile: their fenced lines did too) are counted again."""
        units, facts = self.units, self.facts
        gone = [rid for rid in fitting if rid not in units]
        stale = [rid for rid in fitting if rid in units and units[rid].trust != facts[rid].trust]
        if not gone and not stale:
            return True
        self.left.update(gone)
        self.lines.forget([*gone, *stale])
        packing = self.deps.settings.packing
        facts.update(zip(stale, self.lines.learn([(rid, units[rid]) for rid in stale], packing)))
        return False


def _hits(fit: _Fit, plan: FitPlan, sources: HitSources, qvec: Any, query: str, theta: float,
          budget: int) -> Context:
    """The context of a settled plan: the hits that fit, levels 2 and 3, counted exactly."""
    m, lines, units, facts = fit.deps, fit.lines, fit.units, fit.facts
    ranked, known, wholes = fit.ranked, fit.known, fit.wholes
    assert wholes is not None
    settings = m.settings
    packing = settings.packing
    full, raw = fit.content
    day = packing == "day"
    talk = day and settings.elide_speakers
    fence = settings.fence_untrusted
    shares = shares_for(budget, settings.max_source_share)
    enter, used = plan.enter, plan.used
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
            level = 2 if deeper and score >= theta and fact.short else 1
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
            query, hits, used, len(ranked), dropped, theta=theta, budget=budget, full_text=full,
            raw_content=raw, max_level=m.settings.max_level, packing=packing, count=lines,
            measure=lambda ctx: count_joined(ctx.lines(), with_break, lines.count), stamp_gap=m.settings.stamp_gap,
            elide_speakers=m.settings.elide_speakers, fence=fence, shares=shares,
        )


class _Gone(Exception):
    """A row a whole line needed was deleted meanwhile: it is left out and the fit planned again."""


def _gone(rid: int) -> MAU:
    raise _Gone(rid)
