"""Retrieval planning: more than one query per search, their rankings merged by rank fusion.

One setting chooses it (``planner``: the ``Memory`` setting, or ``search(..., planner=...)``):
``None`` is today's single search; ``"offline"`` (:mod:`.plan_offline`) rewrites the question
from its own form and takes a second hop from the first round's best hits, with no model;
``"llm"`` (:mod:`.plan_llm`) asks the configured model to analyse and expand the question, and
whether the context found can answer it (SimpleMem's intent-aware retrieval planning, bounded).

Every round's queries are ranked as one search ranks its query (:meth:`Retriever.rank`: dense,
BM25 and the signals), the rankings of all rounds are fused by reciprocal rank (the question's
own at weight 1, the planner's at ``PLANNED_WEIGHT``: the question stays the anchor) and the
result is packed once, so the context keeps its budget. Hits are scored against the question as
asked. What ran, why and what it cost is ``Context.plan``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from datetime import datetime

from omnimem.config import PLANNERS
from omnimem.errors import InvalidInputError
from omnimem.fusion import rrf_order
from omnimem.mau import Scope
from omnimem.engine.retrieval.ranking import Ranking
from omnimem.engine.retrieval.search import Retriever
from omnimem.contract.caller import cpu
from omnimem.results import Context, Plan, PlanRound

PLANNED_WEIGHT = 0.5  # a planned query's ranking in the fusion, against the question's own at 1
REASON_CHARS = 300  # of a round's reason (it may quote the model), what Context.plan keeps


def planner_name(value: object) -> str | None:
    """A ``planner`` argument checked: ``None`` (or ``"none"``), ``"offline"`` or ``"llm"``."""
    if value is None or value == "none":
        return None
    if value not in PLANNERS:
        raise InvalidInputError(f"planner must be none, offline or llm, not {value!r}")
    return str(value)


@dataclass(frozen=True)
class Query:
    """What a search asks: the text and everything a ranking needs besides."""

    text: str
    top_k: int
    theta: float
    budget: int
    scope: Scope
    include_superseded: bool
    when: datetime | None
    now: datetime | None
    min_trust: str | None = None  # only units at least this trusted


@dataclass
class Rounds:
    """The rankings of a planned search so far, its rounds and the time each stage took (ms).

    ``deadline`` (``time.monotonic()``): no round's searches start after it; ``stopped`` then says
    which round it cut, and is the plan's note.
    """

    retriever: Retriever
    query: Query
    deadline: float | None = None
    stopped: str | None = None
    rankings: list[Ranking] = field(default_factory=list)
    weights: list[float] = field(default_factory=list)
    rounds: list[PlanRound] = field(default_factory=list)
    ms: dict[str, float] = field(default_factory=dict)
    searched: set[str] = field(default_factory=set)

    def search(self, queries: Sequence[str], reason: str, *, parallel: bool = False) -> list[str]:
        """Rank the queries not searched before (all at once on threads with ``parallel``) as one round.

        The question itself (the first query of the first round) weighs 1 in the fusion, the others
        ``PLANNED_WEIGHT``. A query (a model may propose any) is clipped to ``max_query_chars``, the
        reason to ``REASON_CHARS``. The round holds the caller's search slot while it ranks
        (:mod:`omnimem.contract.caller`); past the deadline a later round is not searched, and the first
        searches the question alone. Returns the queries searched (none: the round is not recorded).
        """
        limit = self.retriever.deps.settings.max_query_chars
        fresh = [q for q in dict.fromkeys(clip(q, limit) for q in queries) if q and q not in self.searched]
        if not fresh:
            return []
        with cpu():
            if self.deadline is not None and time.monotonic() >= self.deadline:
                if self.rounds:
                    self.stopped = f"deadline reached before round {len(self.rounds) + 1}'s searches"
                    return []
                if len(fresh) > 1:
                    self.stopped = "deadline reached before the first round's searches: the question searched alone"
                    fresh = fresh[:1]
            return self._ranked(fresh, clip(reason, REASON_CHARS, "…"), parallel)

    def _ranked(self, fresh: list[str], reason: str, parallel: bool) -> list[str]:
        q = self.query
        started = time.perf_counter()

        again = bool(self.rounds)  # a later round: the search is under way (close waits for it)

        def rank(text: str) -> Ranking:
            return self.retriever.rank(text, q.top_k, q.budget, q.scope, q.include_superseded, q.when, q.now, again=again,
                                       min_trust=q.min_trust)

        if parallel and len(fresh) > 1:
            with ThreadPoolExecutor(max_workers=len(fresh)) as pool:
                ranked = list(pool.map(rank, fresh))  # in input order, whichever finishes first
        else:
            ranked = [rank(text) for text in fresh]
        for text, ranking in zip(fresh, ranked):
            self.weights.append(1.0 if not self.rankings else PLANNED_WEIGHT)
            self.rankings.append(ranking)
            self.searched.add(text)
        self.rounds.append(PlanRound(tuple(fresh), reason))
        self.time(f"search{len(self.rounds)}", started)
        return fresh

    def merged(self) -> Ranking:
        """The rankings so far fused by reciprocal rank, with the question's ranking's sources and vector."""
        first = self.rankings[0]
        if len(self.rankings) == 1:
            return first
        settings = self.retriever.deps.settings
        rest = list(zip((r.order for r in self.rankings[2:]), self.weights[2:]))
        order = rrf_order(first.order, self.rankings[1].order, k=settings.rrf_k, sparse_weight=self.weights[1],
                          extra=rest)
        if self.query.top_k:
            order = order[: self.query.top_k]
        sources = first.sources.with_planned(set(order) - set(first.order))
        return replace(first, order=order, sources=sources, seq=min(r.seq for r in self.rankings))

    def context(self, plan: Callable[[dict[str, float]], Plan]) -> Context:
        """The merged ranking packed once, with the plan ``plan`` makes of the stage times."""
        with cpu():
            return self._packed(plan)

    def _packed(self, plan: Callable[[dict[str, float]], Plan]) -> Context:
        q = self.query
        started = time.perf_counter()
        ctx = self.retriever.pack(q.text, self.merged(), q.top_k, q.theta, q.budget, q.scope)

        def with_question(deeper: Ranking) -> Context:  # the question read deeper, the other rounds as they are
            self.rankings[0] = deeper
            return self.retriever.pack(q.text, self.merged(), q.top_k, q.theta, q.budget, q.scope)

        # every candidate fit with room left: the question is read deeper, as a search without a planner is
        ctx = self.retriever.filled(ctx, self.rankings[0], self.rounds[0].queries[0], q.top_k, q.budget, q.scope,
                                    q.include_superseded, q.when, q.now, with_question, min_trust=q.min_trust)
        self.time("pack", started)
        made = plan(self.ms)
        return replace(ctx, plan=made if self.stopped is None else replace(made, note=self.stopped))

    def time(self, stage: str, started: float) -> None:
        self.ms[stage] = round(self.ms.get(stage, 0.0) + (time.perf_counter() - started) * 1000, 3)


def clip(text: str, limit: int, mark: str = "") -> str:
    """``text`` with its whitespace runs made single spaces, at most ``limit`` characters: a longer one is cut
    (at a space when one is in the second half) and ends with ``mark``."""
    window = text[: 2 * limit + 2]
    short = " ".join(window.split())
    if len(short) <= limit and len(window) == len(text):
        return short
    cut = short[: max(0, limit - len(mark))]
    space = cut.rfind(" ")
    return (cut[:space] if space > limit // 2 else cut).rstrip() + mark
