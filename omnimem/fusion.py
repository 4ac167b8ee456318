"""Merging dense and sparse result lists."""

from __future__ import annotations

import heapq
from collections.abc import Callable, Collection, Hashable, Iterable, Sequence
from typing import TypeVar

import numpy as np

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


def diversify(ranked: Sequence[T], group: Callable[[T], Hashable], *, penalty: float) -> list[T]:
    """Re-rank so one group (a session) does not fill the top alone.

    An item at rank ``r`` keeps the score ``1 / r``, divided by ``1 + penalty *
    n`` where ``n`` counts the items of its group already placed; the best
    score goes next. ``penalty=0`` keeps the order. A question about two
    events (two people, two trips) then sees both before the budget runs out.
    """
    if penalty <= 0 or len(ranked) < 3:
        return list(ranked)
    placed: dict[Hashable, int] = {}
    # a lazy max-heap: an entry's score only falls as its group fills, so a popped entry whose group
    # count is still the one it was scored with is the true best
    heap = [(-1.0 / rank, rank, 0, item) for rank, item in enumerate(ranked, start=1)]
    heapq.heapify(heap)
    out: list[T] = []
    while heap:
        _, rank, seen, item = heapq.heappop(heap)
        key = group(item)
        count = placed.get(key, 0)
        if count != seen:
            heapq.heappush(heap, (-1.0 / rank / (1.0 + penalty * count), rank, count, item))
            continue
        placed[key] = count + 1
        out.append(item)
    return out


def rrf_order(dense: Sequence[int], sparse: Sequence[int], *, k: int = 60, sparse_weight: float = 1.0,
              extra: Sequence[tuple[Sequence[int], float]] = ()) -> list[int]:
    """:func:`rrf_merge` of integer ids (row ids), computed with numpy: the same order, the same float sums.

    A default search fuses two lists of ~300 row ids; doing it in arrays keeps
    that part of a search off the interpreter (and the GIL). Each item's score
    is summed in the same order as :func:`rrf_merge` (its dense term, then its
    BM25 term, starting from 0.0), so ties and near-ties fall the same way.
    ``extra`` holds more (ranking, weight) lists, summed after those two
    (the ranking signals of :mod:`omnimem.engine.retrieval.signals`).
    """
    lists = [(dense, 1.0), (sparse, sparse_weight), *extra]
    ids = [np.asarray(ranking, dtype=np.int64) for ranking, _ in lists]
    ids = [a[np.sort(np.unique(a, return_index=True)[1])] for a in ids]  # first occurrences, in order
    both = np.concatenate(ids)
    if not len(both):
        return []
    weights = np.concatenate([w / (k + np.arange(1, len(a) + 1, dtype=np.float64)) for a, (_, w) in zip(ids, lists)])
    unique, first, inverse = np.unique(both, return_index=True, return_inverse=True)
    scores = np.zeros(len(unique), dtype=np.float64)
    np.add.at(scores, inverse, weights)  # in array order: dense term first, as rrf_merge adds them
    best = np.lexsort((first, -scores))  # by score, then first seen (dense order, then BM25 order)
    out: list[int] = unique[best].tolist()
    return out


def clear_wins_kept(order: Sequence[int], plain: Sequence[int], dense: Sequence[tuple[int, float]],
                    sparse: Sequence[tuple[int, float]], lifted: Iterable[int], *, margin: float,
                    fields: Sequence[Collection[int]] = ()) -> list[int]:
    """``order`` (a fusion with extra lists) with no unit above one that is clearly better in both retrievers.

    ``plain`` is the fusion of ``dense`` and ``sparse`` alone and ``lifted`` the units the extra lists hold.
    A unit ``a`` is clearly better than ``b`` when dense found both, ``a``'s similarity is at least ``margin``
    above ``b``'s, ``a``'s BM25 score is no lower (a unit BM25 did not find scores 0) and ``a`` is in each
    of ``fields`` that holds ``b`` (what the query names that the retrievers do not score: a speaker, a
    time). The extra lists only add to a fused score, so they may re-order near ties of the retrievers,
    never bury such a unit: where they put ``b`` above ``a``, ``a`` is moved up to just before ``b`` (what
    it is clearly better than is kept in the extra lists' order). Units in no such pair keep their places.
    """
    if margin <= 0:
        raise ValueError("margin must be positive (two equal units would each have to come first)")
    cosine: dict[int, float] = {}
    for rid, score in dense:
        cosine.setdefault(rid, score)
    bm25: dict[int, float] = {}
    for rid, score in sparse:
        bm25.setdefault(rid, score)
    moved = set(lifted)
    reach = 1 + max((i for i, rid in enumerate(plain) if rid in moved), default=-1)
    among = {rid for rid in plain[:reach] if rid in cosine}  # what the extra lists can have lifted or passed
    slots = [i for i, rid in enumerate(order) if rid in among]
    if len(slots) < 2:
        return list(order)
    units = [order[i] for i in slots]
    sim = np.array([cosine[r] for r in units], dtype=np.float64)
    text = np.array([bm25.get(r, 0.0) for r in units], dtype=np.float64)
    # before[i, j]: unit i is clearly better than unit j (a strict, transitive order: margin > 0)
    before = (sim[:, None] - sim[None, :] >= margin) & (text[:, None] >= text[None, :])
    for field in fields:
        held = np.array([r in field for r in units], dtype=bool)
        before &= held[:, None] | ~held[None, :]
    if not np.tril(before, -1).any():  # nowhere is a clearly better unit placed below
        return list(order)
    placed = np.zeros(len(units), dtype=bool)
    kept: list[int] = []
    for j in range(len(units)):
        if placed[j]:
            continue
        placed[j] = True
        stack = [(j, iter(np.flatnonzero(before[:, j]).tolist()))]
        while stack:  # each unit after every unit clearly better than it, those in this order too
            node, better = stack[-1]
            for i in better:
                if not placed[i]:
                    placed[i] = True
                    stack.append((i, iter(np.flatnonzero(before[:, i]).tolist())))
                    break
            else:
                stack.pop()
                kept.append(node)
    out = list(order)
    for slot, index in zip(slots, kept):
        out[slot] = units[index]
    return out
