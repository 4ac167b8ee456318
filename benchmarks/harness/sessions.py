"""LongMemEval's published retrieval metrics: session recall_any / recall_all @k, turn recall@10 and NDCG@10.

Shared by the retrieval run (:func:`benchmarks.harness.retrieval.run` scores a conversation with them
when it maps turns to sessions: LongMemEval's, :mod:`benchmarks.retrieval.longmemeval`) and the results
index (:mod:`benchmarks.harness.report`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

SESSION_RANKS = (5, 10)
SESSION_METRICS = (*(f"s_any@{k}" for k in SESSION_RANKS), *(f"s_all@{k}" for k in SESSION_RANKS),
                   "t_recall@10", "t_ndcg@10")


def session_metrics(gold: Sequence[str], sessions: Sequence[str], ranked: Sequence[Sequence[str]],
                    session_of: Mapping[str, str]) -> dict[str, float]:
    """The published LongMemEval retrieval metrics of one ranking.

    Sessions are ranked by their first turn in the candidate ranking
    (LongMemEval's turn-to-session evaluation); ``s_any@k`` is 1 when any answer
    session is among the first k, ``s_all@k`` when all are. Turn level:
    ``t_recall@10`` is the share of evidence turns among the first 10
    candidates, ``t_ndcg@10`` the binary-relevance NDCG of those 10.
    """
    order: list[str] = []
    for ids in ranked:
        for source in ids:
            session = session_of.get(source)
            if session is not None and session not in order:
                order.append(session)
    wanted = set(sessions)
    out: dict[str, float] = {}
    for k in SESSION_RANKS:
        top = set(order[:k])
        out[f"s_any@{k}"] = float(bool(wanted & top)) if wanted else 0.0
        out[f"s_all@{k}"] = float(wanted <= top) if wanted else 0.0
    golden = set(gold)
    first = ranked[:10]
    found = {s for ids in first for s in ids if s in golden}
    out["t_recall@10"] = len(found) / len(golden) if golden else 0.0
    dcg = sum(1 / math.log2(i + 2) for i, ids in enumerate(first) if golden & set(ids))
    ideal = sum(1 / math.log2(i + 2) for i in range(min(10, len(golden))))
    out["t_ndcg@10"] = dcg / ideal if ideal else 0.0
    return out
