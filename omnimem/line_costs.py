"""Token costs of candidates' context lines, remembered per row id.

Packing a 6,000-token context weighs 300-600 candidates, and counting each
line's BPE tokens is most of a search's time (tens of microseconds a line).
A unit's line never changes for its row id: the line is made of the unit's
speaker, summary, modality, metadata (and time, for ``line`` packing), which
no operation rewrites in place (an update is a new unit with a new row id,
and row ids are never reused). So each line is counted once, the first time
it is a candidate, and its cost reused by later searches; the results are
the same as counting every time.

The cache is bounded (it is cleared when full, ``limit`` entries) and safe
to share between threads (single dict operations only).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from omnimem.mau import MAU
from omnimem.tokens import TokenCounter, count_many, count_tokens

LIMIT = 1_000_000  # about 100 MB at most


class LineCosts:
    """Cost of ``line(unit, unit.summary)`` per (row id, packing)."""

    def __init__(self, count: TokenCounter, *, limit: int = LIMIT) -> None:
        self.count = count
        self.limit = limit
        self._costs: dict[tuple[int, str], int] = {}
        self.hits = 0
        self.misses = 0

    def costs(self, units: Sequence[tuple[int | None, MAU]], packing: str,
              line: Callable[[MAU, str], str]) -> list[int]:
        """The cost of each unit's level-1 line; ``None`` row ids are counted without caching."""
        out: list[int | None] = [None if rid is None else self._costs.get((rid, packing)) for rid, _ in units]
        todo = [i for i, cost in enumerate(out) if cost is None]
        if todo:
            texts = [line(units[i][1], units[i][1].summary) for i in todo]
            counted = count_many(texts, threads=False) if self.count is count_tokens else [self.count(t) for t in texts]
            if len(self._costs) + len(todo) > self.limit:
                self._costs = {}
            for i, cost in zip(todo, counted):
                out[i] = cost
                rid = units[i][0]
                if rid is not None:
                    self._costs[(rid, packing)] = cost
        self.hits += len(units) - len(todo)
        self.misses += len(todo)
        return [int(c) for c in out if c is not None]
