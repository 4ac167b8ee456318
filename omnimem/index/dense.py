"""Exact inner-product search over normalised vectors with FAISS.

Vectors are keyed by the unit's integer row id. Scope filtering uses a FAISS
ID selector inside the search, so a scope holding a tiny share of the index
still gets its true top-k (filtering after a global top-k would not).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from pathlib import Path

import faiss
import numpy as np
import numpy.typing as npt

from omnimem.embed.base import Vectors

Ids = npt.NDArray[np.int64]


class DenseIndex:
    """A FAISS ``IndexIDMap2(IndexFlatIP)``; cosine similarity for unit vectors."""

    def __init__(self, dim: int) -> None:
        self.dim = dim
        self._index = faiss.IndexIDMap2(faiss.IndexFlatIP(dim))
        self._lock = threading.RLock()

    def __len__(self) -> int:
        return int(self._index.ntotal)

    def add(self, ids: Iterable[int], vectors: Vectors) -> None:
        id_arr = np.asarray(list(ids), dtype=np.int64)
        if len(id_arr) == 0:
            return
        with self._lock:
            self._index.add_with_ids(np.ascontiguousarray(vectors, dtype=np.float32), id_arr)

    def remove(self, ids: Iterable[int]) -> None:
        id_arr = np.asarray(list(ids), dtype=np.int64)
        if len(id_arr):
            with self._lock:
                self._index.remove_ids(id_arr)

    def search(self, query: Vectors, k: int, allowed: Ids | None = None) -> list[tuple[int, float]]:
        """Top ``k`` (id, similarity) for one query vector, best first."""
        with self._lock:
            total = len(self)
            if total == 0 or k <= 0 or (allowed is not None and len(allowed) == 0):
                return []
            k = min(k, total if allowed is None else min(total, len(allowed)))
            q = np.ascontiguousarray(query.reshape(1, -1), dtype=np.float32)
            if allowed is None:
                scores, ids = self._index.search(q, k)
            else:
                params = faiss.SearchParameters(sel=faiss.IDSelectorBatch(allowed))
                scores, ids = self._index.search(q, k, params=params)
        return [(int(i), float(s)) for i, s in zip(ids[0], scores[0]) if i != -1]

    def save(self, path: Path) -> None:
        tmp = path.with_suffix(path.suffix + ".tmp")
        with self._lock:
            faiss.write_index(self._index, str(tmp))
        tmp.replace(path)

    @classmethod
    def load(cls, path: Path, dim: int) -> DenseIndex:
        index = cls(dim)
        loaded = faiss.read_index(str(path))
        if loaded.d != dim:
            raise ValueError(f"index dimension {loaded.d} != {dim}")
        index._index = loaded
        return index
