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
