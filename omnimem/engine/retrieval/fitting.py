"""The fast packer: a ranking's context from remembered line facts, reading only the rows that fit.

The default search packs here (:meth:`omnimem.engine.retrieval.search.Retriever.pack`); the plain way,
every candidate fetched and packed by :func:`omnimem.engine.retrieval.pyramid.build_context`, gives the
same context (``tests/engine/retrieval/test_retrieval_identical.py``) and is taken where a write interferes (None).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from omnimem import otel
from omnimem.context import FENCE_RULE
from omnimem.engine.deps import Deps
from omnimem.engine.retrieval.line_costs import LineCosts
from omnimem.results import Context, Hit, RawContent
from omnimem.engine.retrieval.pyramid import WholeLines, finish_context, fit_plan, line_of
from omnimem.engine.retrieval.ranking import Sources, similarity
from omnimem.engine.retrieval.row_cache import RowCache
from omnimem.engine.retrieval.shares import shares_for
from omnimem.mau import MAU, Scope
from omnimem.tokens import count_joined

STAMPED = "day-stamped"  # the line-cost cache's key for a day-packed line written after its time of day

FullText = Callable[[MAU], str | None]  # a unit's level-2 text
Raw = Callable[[MAU], RawContent | None]  # a unit's level-3 content


def pack_fitting(
    deps: Deps, lines: LineCosts, rows: RowCache, content: tuple[FullText, Raw], query: str, qvec: Any,
    order: list[int], sources: Sources, scope: Scope, theta: float, budget: int, seq: int,
) -> Context | None:
    """The context of ``order``, fetching only the rows whose lines fit (None: a write interfered).

    Rows seen before are judged by their remembered line facts
    (:mod:`omnimem.engine.retrieval.line_costs`), the others fetched and learnt. Only the
    rows that fit at level 1 are then fetched and made hits, with their
    ranks among all candidates, which gives the same context as packing
    every candidate (``tests/engine/retrieval/test_retrieval_identical.py``). The rendered
    context is counted from its lines' remembered counts
    (:func:`omnimem.tokens.count_joined`) instead of encoded again. If the
    store changed meanwhile (a remembered row may be gone), the caller
    packs the slow way.
    """
    m = deps
    full, raw = content
    packing = m.settings.packing
    facts = lines.known(order, packing)
    read = partial(rows.read, seq=seq, fetch=m.store.get_rows)  # rows read since the last write: kept
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
    allowance = int(budget * share)
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

    wholes = WholeLines(unit_at, full, line, lines)
    fence = m.settings.fence_untrusted
    fenced = [f.fenced for f in known] if fence else None
    rule_cost = lines.count(FENCE_RULE) if fenced is not None and any(fenced) else 0
    shares = shares_for(budget, m.settings.max_source_share)
    try:
        with otel.stage("omnimem.search.fit"):
            plan = fit_plan([f.cost for f in known], [f.key for f in known] if grouped else None,
                            [f.header_cost for f in known] if grouped else None,
                            [f.minute for f in known] if day else None,
                            [f.stamp_cost for f in known] if day else None, budget=budget,
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
    rows.keep(seq, units)  # every row was read while the store stood at ``seq``
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
    """A row packing wanted was deleted meanwhile: the caller packs the slow way."""


def _gone(rid: int) -> MAU:
    raise _Gone(rid)
