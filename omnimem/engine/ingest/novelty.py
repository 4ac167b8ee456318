"""Selective ingestion for text: drop input that repeats what was just stored.

The paper's filter: word-set Jaccard overlap between the new text and the
recent summaries of the same scope; above the threshold the input is redundant.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache
from dataclasses import dataclass

_WORD = re.compile(r"\w+")


@lru_cache(maxsize=8192)  # each recent summary is compared with every new text of its window: split it once
def word_set(text: str) -> frozenset[str]:
    """Lower-cased word tokens of ``text``."""
    return frozenset(_WORD.findall(text.lower()))


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    """|a & b| / |a | b|; two empty sets count as unrelated (0.0)."""
    union = a | b
    return len(a & b) / len(union) if union else 0.0


@dataclass(frozen=True, slots=True)
class NoveltyDecision:
    """Whether an input is new enough to store, and against what it was judged."""

    accepted: bool
    similarity: float
    closest_id: str | None

    @property
    def reason(self) -> str:
        if self.accepted:
            return "novel"
        return f"redundant: word overlap {self.similarity:.2f} with unit {self.closest_id}"


@dataclass(frozen=True, slots=True)
class NoveltyFilter:
    """Reject text whose Jaccard overlap with a recent summary exceeds ``threshold``."""

    threshold: float = 0.8
    enabled: bool = True

    def check(self, text: str, recent: Iterable[tuple[str, str]]) -> NoveltyDecision:
        """Judge ``text`` against ``recent`` (unit id, summary) pairs."""
        if not self.enabled:
            return NoveltyDecision(True, 0.0, None)
        words = word_set(text)
        best, best_id = 0.0, None
        for unit_id, summary in recent:
            score = jaccard(words, word_set(summary))
            if score > best:
                best, best_id = score, unit_id
        return NoveltyDecision(best <= self.threshold, best, best_id)
