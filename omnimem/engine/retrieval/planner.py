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
from omnimem.engine.retrieval.search import Ranking, Retriever
from omnimem.results import Context, Plan, PlanRound

PLANNED_WEIGHT = 0.5  # a planned query's ranking in the fusion, against the question's own at 1


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
    k: int
    theta: float
    budget: int
    scope: Scope
    include_superseded: bool
    when: datetime | None
    now: datetime | None


@dataclass
class Rounds:
    """The rankings of a planned search so far, its rounds and the time each stage took (ms)."""

    retriever: Retriever
    query: Query
    rankings: list[Ranking] = field(default_factory=list)
    weights: list[float] = field(default_factory=list)
    rounds: list[PlanRound] = field(default_factory=list)
    ms: dict[str, float] = field(default_factory=dict)
    searched: set[str] = field(default_factory=set)

    def search(self, queries: Sequence[str], reason: str, *, parallel: bool = False) -> list[str]:
        """Rank the queries not searched before (all at once on threads with ``parallel``) as one round.

        The question itself (the first query of the first round) weighs 1 in the fusion, the others
        ``PLANNED_WEIGHT``. Returns the queries searched (none: the round is not recorded).
        """
        fresh = [q for q in dict.fromkeys(" ".join(q.split()) for q in queries) if q and q not in self.searched]
        if not fresh:
            return []
        q = self.query
        started = time.perf_counter()

        again = bool(self.rounds)  # a later round: the search is under way (close waits for it)

        def rank(text: str) -> Ranking:
            return self.retriever.rank(text, q.k, q.budget, q.scope, q.include_superseded, q.when, q.now, again=again)

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
        settings = self.retriever.parts.settings
        rest = list(zip((r.order for r in self.rankings[2:]), self.weights[2:]))
        order = rrf_order(first.order, self.rankings[1].order, k=settings.rrf_k, sparse_weight=self.weights[1],
                          extra=rest)
        if self.query.k:
            order = order[: self.query.k]
        sources = first.sources.with_planned(set(order) - set(first.order))
        return replace(first, order=order, sources=sources, seq=min(r.seq for r in self.rankings))

    def context(self, plan: Callable[[dict[str, float]], Plan]) -> Context:
        """The merged ranking packed once, with the plan ``plan`` makes of the stage times."""
        q = self.query
        started = time.perf_counter()
        ctx = self.retriever.pack(q.text, self.merged(), q.k, q.theta, q.budget, q.scope)

        def with_question(deeper: Ranking) -> Context:  # the question read deeper, the other rounds as they are
            self.rankings[0] = deeper
            return self.retriever.pack(q.text, self.merged(), q.k, q.theta, q.budget, q.scope)

        # every candidate fit with room left: the question is read deeper, as a search without a planner is
        ctx = self.retriever.filled(ctx, self.rankings[0], self.rounds[0].queries[0], q.k, q.budget, q.scope,
                                    q.include_superseded, q.when, q.now, with_question)
        self.time("pack", started)
        return replace(ctx, plan=plan(self.ms))

    def time(self, stage: str, started: float) -> None:
        self.ms[stage] = round(self.ms.get(stage, 0.0) + (time.perf_counter() - started) * 1000, 3)

