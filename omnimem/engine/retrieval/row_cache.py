"""Units by row id, remembered for as long as the store has not changed.

A default 6,000-token search packs ~200 hits, and reading their rows and making
them units was the largest part of packing (``search-stages``: 2.5-3 ms of a
9 ms search at 10k units). Consecutive searches mostly pack the same rows, so
the units read are remembered with the store's change counter
(:meth:`omnimem.store.base.Store.seq`) they were read at; a search that finds
the counter where it was reuses them, and any write (an add, a supersession,
a delete or forget, a re-embedding: every one advances the counter, in any
process) makes the next search start afresh. Units are frozen, so sharing
one between searches changes nothing a caller sees: the results are those of
reading every row (``tests/engine/retrieval/test_retrieval_identical.py``).

Safe to share between threads: the remembered rows and their counter value are
swapped as one tuple, and only single dict operations touch the rows. Bounded:
cleared when full.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from omnimem.mau import MAU

LIMIT = 20_000  # units remembered (~2-3 KB each with their vector)


class RowCache:
    """The units read as of one value of the store's change counter."""

    def __init__(self, limit: int = LIMIT) -> None:
        self.limit = limit
        self._state: tuple[int, dict[int, MAU]] = (-1, {})

    def read(self, rids: Iterable[int], seq: int, fetch: Callable[[list[int]], Mapping[int, MAU]]) -> dict[int, MAU]:
        """The units of ``rids`` as the store holds them at counter ``seq``: remembered ones, the rest fetched.

        Rows gone from the store are left out. What was fetched is not remembered yet: the caller
        :meth:`keep` s it once it has checked the counter did not move while it read.
        """
        at, rows = self._state
        known = rows if at == seq else {}
        out: dict[int, MAU] = {}
        missing: list[int] = []
        for rid in rids:
            unit = known.get(rid)
            if unit is None:
                missing.append(rid)
            else:
                out[rid] = unit
        if missing:
            out.update(fetch(missing))
        return out

    def keep(self, seq: int, units: Mapping[int, MAU]) -> None:
        """Remember ``units``, read while the store's counter stood at ``seq`` (checked by the caller after
        reading). Units of an older counter value than the remembered ones are not kept."""
        at, rows = self._state
        if seq < at:
            return
        if seq != at or len(rows) + len(units) > self.limit:
            rows = {}
            self._state = (seq, rows)
        rows.update(units)
