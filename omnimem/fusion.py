"""Merging dense and sparse result lists."""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import TypeVar

T = TypeVar("T", bound=Hashable)


def union_merge(dense: Sequence[T], sparse: Sequence[T]) -> list[T]:
    """Set union that keeps the dense order and appends BM25-only hits.

    Dense similarity is the better ranking signal, BM25 the better recall
    signal for names and rare words; the union keeps both without having to
    calibrate one score against the other.
    """
    seen: set[T] = set()
    merged: list[T] = []
    for item in (*dense, *sparse):
        if item not in seen:
            seen.add(item)
            merged.append(item)
    return merged


def rrf_merge(dense: Sequence[T], sparse: Sequence[T], *, k: int = 60, sparse_weight: float = 1.0) -> list[T]:
    """Reciprocal rank fusion: order by the sum of ``1 / (k + rank)`` over both lists.

    A unit ranked well by both retrievers beats one ranked first by only one,
    and BM25-only hits compete on rank instead of queueing behind every dense
    hit: measured on LoCoMo with deep lists, it is what lets a tight token
    budget hold both kinds of evidence (benchmarks/results/README.md).
    ``sparse_weight`` scales the BM25 list's share. Ties keep the dense
    order, then the BM25 order.
    """
    scores: dict[T, float] = {}
    first_seen: dict[T, int] = {}
    for ranking, weight in ((dense, 1.0), (sparse, sparse_weight)):
        for rank, item in enumerate(dict.fromkeys(ranking), start=1):
            scores[item] = scores.get(item, 0.0) + weight / (k + rank)
            first_seen.setdefault(item, len(first_seen))
    return sorted(scores, key=lambda item: (-scores[item], first_seen[item]))
