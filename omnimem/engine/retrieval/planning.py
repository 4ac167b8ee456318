"""Which planner runs a search (the ``planner`` setting or argument): none, offline or llm (:mod:`.planner`)."""

from __future__ import annotations

import time

from omnimem.engine.retrieval.plan_llm import llm_search
from omnimem.engine.retrieval.plan_offline import offline_search
from omnimem.engine.retrieval.planner import Query, Rounds
from omnimem.engine.retrieval.search import Retriever
from omnimem.contract.caller import cpu
from omnimem.results import Context


def planned_search(retriever: Retriever, planner: str | None, query: Query) -> Context:
    """``query`` searched under ``planner`` (``None``: the one search every ``Memory.search`` was).

    A search with no model to wait for holds the caller's search slot (:mod:`omnimem.contract.caller`) from
    the moment its query is embedded (the plain search embeds it first, outside the slot) to its end; the
    LLM planner's rounds take it for their ranking and packing only (:class:`Rounds`).
    Planned rounds start before ``plan_deadline`` seconds have passed, or not at all.
    """
    deadline = time.monotonic() + retriever.deps.settings.plan_deadline
    if planner == "llm":
        return llm_search(Rounds(retriever, query, deadline=deadline))
    if planner is None:
        q = query
        vectors = retriever.query_vectors(q.text, retriever.searched(q.text, q.scope))
        with cpu():
            return retriever.search(q.text, q.top_k, q.theta, q.budget, q.scope, q.include_superseded, q.when, q.now,
                                    q.min_trust, vectors=vectors)
    with cpu():
        return offline_search(Rounds(retriever, query, deadline=deadline))
