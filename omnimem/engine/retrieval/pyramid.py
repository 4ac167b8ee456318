"""Pyramid retrieval: how much of each hit goes into the context.

Level 1 is the summary line of each candidate, level 2 swaps in the full text
for candidates at least ``theta`` similar to the query, level 3 attaches raw
content. Every step spends from one token budget, so the rendered context never
exceeds it. Pure functions: the loaders for cold-tier content are passed in.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from omnimem.mau import MAU
# The value objects and their line rules are defined in omnimem.results; these paths keep working.
from omnimem.results import Context as Context, Hit as Hit, RawContent as RawContent
from omnimem.results import group_header as group_header, group_key as group_key, media_label as media_label
from omnimem.results import session_line as session_line, unit_line as unit_line
from omnimem.tokens import TokenCounter, count_many, count_tokens

@dataclass(frozen=True, slots=True)
class Candidate:
    """A retrieved unit before packing: rank order is the list order."""

    unit: MAU
    score: float
    sources: frozenset[str]
    fused: float | None = None
    ranks: Mapping[str, int] = field(default_factory=dict)


NEWLINE = 1  # what packing charges for the line break before a line (BPE may merge it: an upper bound)


def build_context(
    query: str,
    candidates: Sequence[Candidate],
    *,
    theta: float,
    budget: int,
    full_text: Callable[[MAU], str | None],
    raw_content: Callable[[MAU], RawContent | None],
    max_level: int = 3,
    packing: str = "line",
    count: TokenCounter = count_tokens,
    costs: Sequence[int] | None = None,
) -> Context:
    """Pack ``candidates`` into a context of at most ``budget`` tokens.

    Level 1 goes in rank order and skips a line that does not fit (a later,
    shorter one may). Levels 2 and 3 are then spent greedily by similarity per
    extra token, so the budget goes where it buys the most relevance. With
    ``session`` packing a group header is charged when its first hit enters.
    Each line is charged its own tokens plus one for its line break; the
    rendered text is then counted exactly, so ``Context.tokens`` is the real
    count of ``Context.render()`` and never exceeds ``budget``. ``costs``, when
    given, are the candidates' level-1 line costs, already counted (see
    :mod:`omnimem.engine.retrieval.line_costs`).
    """
    if packing not in ("line", "session"):
        raise ValueError(f"unknown packing {packing!r}")
    line = unit_line if packing == "line" else session_line
    texts = [line(c.unit, c.unit.summary) for c in candidates]
    costs = list(costs) if costs is not None else _counts(texts, count)
    if len(costs) != len(texts):
        raise ValueError("one cost per candidate")
    hits: list[Hit] = []
    dropped: list[str] = []
    keys = [group_key(c.unit) for c in candidates] if packing == "session" else None
    enter, used = fit_lines(costs, keys, lambda i: group_header(candidates[i].unit), budget=budget, count=count)
    for rank, (cand, text, cost, fits) in enumerate(zip(candidates, texts, costs, enter), start=1):
        if fits:
            hits.append(Hit(cand.unit, cand.score, 1, rank, cand.sources, text, cost, None, cand.fused, cand.ranks))
        else:
            dropped.append(cand.unit.id)
    return finish_context(query, hits, used, len(candidates), dropped, theta=theta, budget=budget,
                          full_text=full_text, raw_content=raw_content, max_level=max_level, packing=packing,
                          count=count)


def finish_context(
    query: str, hits: list[Hit], used: int, total: int, dropped: Sequence[str], *, theta: float, budget: int,
    full_text: Callable[[MAU], str | None], raw_content: Callable[[MAU], RawContent | None], max_level: int,
    packing: str, count: TokenCounter, measure: Callable[[Context], int] | None = None,
) -> Context:
    """Levels 2 and 3 on top of the level-1 ``hits`` (rank order, ``used`` tokens), then the exact count.

    ``total`` is how many candidates were weighed, ``dropped`` the ids that did
    not fit at level 1. ``measure`` counts a context's rendered text (default:
    ``count(ctx.render())``); a caller that knows its lines' counts passes a
    faster one that gives the same number (:func:`omnimem.tokens.count_joined`).
    """
    line = unit_line if packing == "line" else session_line
    if max_level >= 2:
        used = _upgrade(hits, used, budget, lambda h: _level2(h, theta, full_text, line, count))
    if max_level >= 3:
        used = _upgrade(hits, used, budget, lambda h: _level3(h, raw_content, count))
    ctx = Context(query, tuple(hits), used, budget, total, tuple(dropped), packing=packing)
    return _measured(ctx, measure or (lambda c: count(c.render())))


def fit_lines(
    costs: Sequence[int], keys: Sequence[tuple[Any, ...]] | None, header: Callable[[int], str], *,
    budget: int, count: TokenCounter,
) -> tuple[list[bool], int]:
    """Level 1: which lines enter, in rank order, and the tokens they use.

    A line that does not fit is skipped (a later, shorter one may fit). With
    session packing (``keys`` given: each line's group) a group's header
    (``header(i)``, the text of line ``i``'s group) is charged when its first
    line enters. Needs only costs and groups, so a caller that remembers them
    can decide what fits before fetching any unit.
    """
    enter: list[bool] = []
    headers: set[tuple[Any, ...]] = set()
    used = 0
    for i, cost in enumerate(costs):
        extra = 0
        if keys is not None and keys[i] not in headers:
            extra = count(header(i)) + NEWLINE
        fits = used + cost + NEWLINE + extra <= budget
        if fits:
            used += cost + NEWLINE + extra
            if keys is not None:
                headers.add(keys[i])
        enter.append(fits)
    return enter, used


def fit_costs(
    costs: Sequence[int], keys: Sequence[object] | None, header_costs: Sequence[int] | None, *, budget: int,
) -> tuple[list[bool], int]:
    """:func:`fit_lines` with each line's group header already counted (``header_costs[i]``: line ``i``'s).

    The same decisions, for a caller that remembers the header costs (the
    default retrieval, :mod:`omnimem.fitting`): a tight loop over integers.
    """
    enter: list[bool] = []
    charged: set[object] = set()
    used = 0
    for i, cost in enumerate(costs):
        need = used + cost + NEWLINE
        key = None
        if keys is not None and header_costs is not None:
            key = keys[i]
            if key not in charged:
                need += header_costs[i] + NEWLINE
            else:
                key = None
        if need <= budget:
            used = need
            if key is not None:
                charged.add(key)
            enter.append(True)
        else:
            enter.append(False)
    return enter, used


def reranked(ctx: Context, ranks: Sequence[int], dropped: Sequence[str], total: int) -> Context:
    """A context packed from the fitting candidates only, with the ranks and drops of all of them.

    ``ranks[i]`` is the rank among all candidates of the ``i``-th one packed,
    ``dropped`` the ids that did not fit at level 1, ``total`` how many
    candidates there were: the same context as packing all of them.
    """
    hits = tuple(Hit(h.unit, h.score, h.level, ranks[h.rank - 1], h.sources, h.text, h.tokens, h.raw, h.fused,
                     h.ranks) for h in ctx.hits)
    return replace(ctx, hits=hits, candidates=total, dropped=(*dropped, *ctx.dropped))


def _counts(texts: Sequence[str], count: TokenCounter) -> list[int]:
    return count_many(texts) if count is count_tokens else [count(t) for t in texts]


def _measured(ctx: Context, measure: Callable[[Context], int]) -> Context:
    """Count the rendered context exactly; drop the lowest-ranked hits in the rare case it overflows."""
    hits = list(ctx.hits)
    dropped = list(ctx.dropped)
    while True:
        ctx = replace(ctx, hits=tuple(hits), dropped=tuple(dropped))
        exact = measure(ctx) if hits else 0
        if exact <= ctx.budget or not hits:
            return replace(ctx, tokens=exact)
        last = max(hits, key=lambda h: h.rank)
        hits.remove(last)
        dropped.append(last.unit.id)


def _level2(
    hit: Hit, theta: float, full_text: Callable[[MAU], str | None], line: Callable[[MAU, str], str],
    count: TokenCounter,
) -> Hit | None:
    if hit.score < theta:
        return None
    full = full_text(hit.unit)
    if full is None:
        return None
    if full == hit.unit.summary:  # nothing more to show, but the hit earned level 2 (built directly:
        return Hit(hit.unit, hit.score, 2, hit.rank, hit.sources, hit.text, hit.tokens, hit.raw,  # most hits)
                   hit.fused, hit.ranks)
    text = line(hit.unit, full)
    return replace(hit, level=2, text=text, tokens=count(text))


def _level3(hit: Hit, raw_content: Callable[[MAU], RawContent | None], count: TokenCounter) -> Hit | None:
    raw = raw_content(hit.unit)
    if raw is None:
        return None
    return replace(hit, level=3, raw=raw, tokens=hit.tokens + raw.cost(count) + NEWLINE)


def _upgrade(hits: list[Hit], used: int, budget: int, propose: Callable[[Hit], Hit | None]) -> int:
    """Apply upgrades greedily by score per extra token while they fit."""
    offers: list[tuple[float, int, Hit]] = []
    for i, hit in enumerate(hits):
        better = propose(hit)
        if better is not None:
            extra = better.tokens - hit.tokens
            offers.append((hit.score / max(extra, 1), i, better))
    offers.sort(key=lambda o: (-o[0], o[1]))
    for _, i, better in offers:
        extra = better.tokens - hits[i].tokens
        if used + extra <= budget:
            hits[i] = better
            used += extra
    return used
