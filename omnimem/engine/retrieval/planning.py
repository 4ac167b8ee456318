"""Which planner runs a search (the ``planner`` setting or argument): none, offline or llm (:mod:`.planner`)."""

from __future__ import annotations

from omnimem.engine.retrieval.plan_llm import llm_search
from omnimem.engine.retrieval.plan_offline import offline_search
from omnimem.engine.retrieval.planner import Query, Rounds
from omnimem.engine.retrieval.search import Retriever
from omnimem.results import Context


def planned_search(retriever: Retriever, planner: str | None, query: Query) -> Context:
    """``query`` searched under ``planner`` (``None``: the one search every ``Memory.search`` was)."""
    if planner is None:
        q = query
        return retriever.search(q.text, q.k, q.theta, q.budget, q.scope, q.include_superseded, q.when, q.now)
    if planner == "offline":
        return offline_search(Rounds(retriever, query))
    return llm_search(Rounds(retriever, query))
