"""``CandidateSearch`` of the embedded backend: FAISS and bm25s in the process.

The filter (scope, supersession, ``as_of``) is resolved once per search
into the row ids it admits, from the SQLite hot tier, and handed to FAISS
and bm25s as an allow-list. CLIP image vectors (table ``clip_vectors``) get
an in-memory FAISS index per model, rebuilt when the store's change counter
moves: images are a small share of the units.

The admitted row ids of a filter are remembered per scope until the change
counter moves (a scoped search read ~1,000 row ids from SQLite each time;
any write, by this process or another, makes the next search read them again).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from omnimem.index.dense import DenseIndex, Ids
from omnimem.index.manager import IndexSet
from omnimem.mau import MAU
from omnimem.store.base import SearchFilter, Vector
from omnimem.store.sqlite.store import SQLiteStore

_REMEMBERED = 256  # filters whose admitted row ids are kept (one array each)


class EmbeddedSearch:
    """Dense, text and image search over one :class:`SQLiteStore`, kept in step by its change counter."""

    def __init__(self, store: SQLiteStore, indexes: IndexSet) -> None:
        self.store = store
        self.indexes = indexes
        self._clip: dict[str, tuple[int, DenseIndex | None]] = {}  # model -> (seq, index)
        self._clip_lock = threading.Lock()
        self._allowed: dict[SearchFilter, tuple[int, Ids | None]] = {}  # -> (seq, admitted row ids)

    def within(self, where: SearchFilter) -> EmbeddedCandidates:
        if where.as_of is not None:  # a point in time: read each time
            return EmbeddedCandidates(self, self.store.rids_in_scope(
                where.scope, include_superseded=where.include_superseded, as_of=where.as_of,
                min_trust=where.min_trust))
        key = where  # the whole filter (frozen): a field added to it is part of the key
        seq = self.store.seq()  # read before the rows: a write after it makes the entry stale, never wrong
        cached = self._allowed.get(key)
        if cached is not None and cached[0] == seq:
            return EmbeddedCandidates(self, cached[1])
        allowed = self.store.rids_in_scope(where.scope, include_superseded=where.include_superseded,
                                           min_trust=where.min_trust)
        if allowed is not None:
            allowed.setflags(write=False)  # shared by the searches that follow
        if len(self._allowed) >= _REMEMBERED:
            self._allowed = {}
        self._allowed[key] = (seq, allowed)
        return EmbeddedCandidates(self, allowed)

    def sync(self) -> None:
        self.indexes.sync()

    def added(self, rows: Sequence[tuple[int, MAU]], vectors: Any, write_seq: int, writes: int = 1) -> None:
        self.indexes.added(rows, vectors, write_seq, writes)

    def removed(self, rids: Sequence[int], write_seq: int) -> None:
        self.indexes.removed(rids, write_seq)

    def save(self) -> None:
        self.indexes.save()

    def sizes(self) -> dict[str, int]:
        return self.indexes.sizes()

    def clip_index(self, model: str) -> DenseIndex | None:
        """The CLIP index of ``model``'s image vectors (None while there are none)."""
        with self._clip_lock:
            seq = self.store.seq()
            cached = self._clip.get(model)
            if cached is None or cached[0] != seq:
                rids, vectors = self.store.clip_vectors(model)
                index = None
                if vectors is not None:
                    index = DenseIndex(vectors.shape[1])
                    index.add(rids.tolist(), vectors)
                cached = self._clip[model] = (seq, index)
            return cached[1]


class EmbeddedCandidates:
    """One search's view: the admitted row ids (``None``: every unit) and the indexes."""

    together = False  # each lookup is a millisecond in this process: a second thread would cost more

    def __init__(self, search: EmbeddedSearch, allowed: Ids | None) -> None:
        self._search = search
        self.allowed = allowed
        self._allowed_set: set[int] | None = None

    def dense(self, vector: Vector, k: int) -> list[tuple[int, float]]:
        return self._search.indexes.search_dense(vector, k, self.allowed)

    def text(self, query: str, k: int) -> list[tuple[int, float]]:
        return self._search.indexes.search_sparse(query, k, self.allowed)

    def images(self, vector: Vector, model: str, k: int) -> list[tuple[int, float]]:
        index = self._search.clip_index(model)
        return [] if index is None else index.search(vector, k, self.allowed)

    def admitted(self, rids: Sequence[int]) -> set[int]:
        if self.allowed is None:
            return set(rids)
        if self._allowed_set is None:
            self._allowed_set = set(self.allowed.tolist())
        return {rid for rid in rids if rid in self._allowed_set}
