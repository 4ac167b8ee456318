"""Inner-product search over normalised vectors with FAISS: exact when small, IVF when large.

Vectors are keyed by the unit's integer row id.

Below ``ann_threshold`` vectors (50,000 by default) the index is an exact
``IndexIDMap2(IndexFlatIP)``: a flat scan of 50k x 384 floats costs about 1 ms,
and the tests rely on exact results. Above it, the next search (or save)
converts it to an ``IndexIVFFlat`` with a hashtable direct map, so that

- ids stay the unit row ids and ``remove_ids`` works (HNSW cannot remove, and
  would need tombstones plus periodic rebuilds);
- vectors stay full float32 (no quantisation error in the scores);
- a scoped search can reconstruct exactly the allowed vectors.

``nlist`` grows with the index (about 2 x sqrt(n)); the coarse quantiser is
trained on a deterministic sample and retrained once the index has grown 4x
past its training size, so training is amortised O(n). Conversion is lazy
(at the next search or save) so a bulk rebuild, which adds in chunks, trains
once. ``nprobe`` (a fifth of the lists) is chosen for recall@20 >= 0.98
against exact search; ``python -m benchmarks perf`` measures recall at every size.

Scope filtering decides by the allowed set's size and share:

- a small allowed set (``exact_subset_limit``, 20,000 ids): the allowed vectors
  are reconstructed and ranked by brute force, which is exact and cheaper than
  a filtered IVF scan that must visit most lists to find a small scope's top-k;
- otherwise the IVF scan takes an ID selector and ``nprobe`` is raised by
  1/share, so as many allowed vectors are scanned as an unfiltered search would
  scan (near-exact; a share of 1 is the unfiltered search).
"""

from __future__ import annotations

import math
import os
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import faiss
import numpy as np
import numpy.typing as npt

from omnimem.embed.base import Vectors
from omnimem.index.rwlock import RWLock

Ids = npt.NDArray[np.int64]

ANN_THRESHOLD = 50_000
EXACT_SUBSET_LIMIT = 20_000
_RETRAIN_GROWTH = 4
_TRAIN_POINTS_PER_LIST = 40  # FAISS warns below 39
_SEED = 1234


def choose_nlist(n: int) -> int:
    """IVF list count for ``n`` vectors: ~2 sqrt(n), between 64 and 4096."""
    return int(min(4096, max(64, round(2 * math.sqrt(n)))))


def choose_nprobe(nlist: int) -> int:
    """Lists scanned per query: a fifth of them, at least 16.

    Measured on 100k synthetic bag-of-words vectors (nlist 632), recall@20
    against exact search is 0.80 at nprobe 19, 0.95 at 64, 0.974 at 96 and
    0.984 at 128 (1/5): recall comes first, so 1/5.
    """
    return min(nlist, max(16, nlist // 5))


class DenseIndex:
    """Exact FAISS index up to ``ann_threshold`` vectors, IVF above; cosine similarity for unit vectors."""

    def __init__(
        self,
        dim: int,
        *,
        ann_threshold: int = ANN_THRESHOLD,
        exact_subset_limit: int = EXACT_SUBSET_LIMIT,
        nprobe: int | None = None,
    ) -> None:
        self.dim = dim
        self.ann_threshold = ann_threshold
        self.exact_subset_limit = exact_subset_limit
        self.nprobe_override = nprobe
        self._index: Any = faiss.IndexIDMap2(faiss.IndexFlatIP(dim))
        self._trained_size = 0  # vectors the IVF quantiser was trained for; 0 while exact
        # searches share the index (FAISS searches are const and release the GIL); an add, a remove or
        # the swap to a newly trained IVF is exclusive; ``_writer`` orders changes and trains outside ``_rw``
        self._rw = RWLock()
        self._writer = threading.RLock()
        self._training = threading.Lock()
        self._journal: list[tuple[Ids, Vectors | None]] | None = None  # changes made while training

    def __len__(self) -> int:
        return int(self._index.ntotal)

    @property
    def is_ann(self) -> bool:
        return isinstance(self._index, faiss.IndexIVF)

    @property
    def nlist(self) -> int:
        return int(self._index.nlist) if self.is_ann else 0

    @property
    def nprobe(self) -> int:
        if not self.is_ann:
            return 0
        return min(self.nlist, self.nprobe_override or choose_nprobe(self.nlist))

    def add(self, ids: Iterable[int], vectors: Vectors) -> None:
        id_arr = np.asarray(list(ids), dtype=np.int64)
        if len(id_arr) == 0:
            return
        vec_arr = np.ascontiguousarray(vectors, dtype=np.float32)
        with self._writer, self._rw.write():
            self._index.add_with_ids(vec_arr, id_arr)
            if self._journal is not None:  # a training is running: it replays this before its swap
                self._journal.append((id_arr, vec_arr))

    def remove(self, ids: Iterable[int]) -> None:
        id_arr = np.asarray(list(ids), dtype=np.int64)
        if len(id_arr):
            with self._writer, self._rw.write():
                self._index.remove_ids(id_arr)
                if self._journal is not None:
                    self._journal.append((id_arr, None))

    # -- ANN conversion ---------------------------------------------------------
    @property
    def needs_training(self) -> bool:
        """Whether the size calls for switching to IVF or retraining it."""
        n = len(self)
        if n <= self.ann_threshold:
            return False  # stays as it is: an IVF that shrank keeps working (filtered search stays exact-ish)
        return not (self.is_ann and n < _RETRAIN_GROWTH * self._trained_size)

    def optimize(self) -> None:
        """Switch to IVF (or retrain it) if the size calls for it; a no-op otherwise.

        The owner of the index calls it after adding (``IndexSet`` does, in a
        background thread), so searches never train. Training holds no lock:
        searches use the old index, adds and removes go on and are replayed on
        the new one before the swap, which alone is exclusive.
        """
        with self._training:  # one training at a time
            with self._writer:
                if not self.needs_training:
                    return
                with self._rw.read():
                    ids, vecs = self._all_vectors()
                self._journal = []
            try:
                # no lock held: adds and removes go on (recorded in the journal), searches use the old index
                trained = _train_ivf(vecs, self.dim)
                trained.add_with_ids(vecs, ids)
                with self._writer:
                    for changed, added in self._journal:  # what happened while we trained, in order
                        if added is None:
                            trained.remove_ids(changed)
                        else:
                            trained.add_with_ids(added, changed)
                    with self._rw.write():
                        self._index = trained
                        self._trained_size = len(ids)
            finally:
                with self._writer:
                    self._journal = None

    def _all_vectors(self) -> tuple[Ids, Vectors]:
        if not self.is_ann:
            ids = faiss.vector_to_array(self._index.id_map).astype(np.int64)
            return ids, self._index.index.reconstruct_n(0, len(ids))
        invlists = self._index.invlists
        id_parts: list[Ids] = []
        vec_parts: list[Vectors] = []
        for lst in range(invlists.nlist):
            size = invlists.list_size(lst)
            if size == 0:
                continue
            id_parts.append(faiss.rev_swig_ptr(invlists.get_ids(lst), size).copy())
            codes = faiss.rev_swig_ptr(invlists.get_codes(lst), size * self.dim * 4)
            vec_parts.append(codes.view(np.float32).reshape(size, self.dim).copy())
        return np.concatenate(id_parts), np.ascontiguousarray(np.vstack(vec_parts))

    # -- search -----------------------------------------------------------------
    def search(self, query: Vectors, k: int, allowed: Ids | None = None) -> list[tuple[int, float]]:
        """Top ``k`` (id, similarity) for one query vector, best first (equal scores: lower id first).

        An index used on its own converts to IVF at its first search after
        growing past the threshold; ``IndexSet`` has always done so when adding.
        """
        if self.needs_training:
            self.optimize()
        with self._rw.read():
            threads = faiss.omp_get_max_threads()
            # one query has nothing to split across threads: OpenMP's start-up and barrier cost
            # 13 ms instead of 0.7 ms per search on a busy 2-core machine (the setting is per thread)
            faiss.omp_set_num_threads(1)
            try:
                return self._search(query, k, allowed)
            finally:
                faiss.omp_set_num_threads(threads)

    def _search(self, query: Vectors, k: int, allowed: Ids | None) -> list[tuple[int, float]]:
        total = len(self)
        if total == 0 or k <= 0 or (allowed is not None and len(allowed) == 0):
            return []
        k = min(k, total if allowed is None else min(total, len(allowed)))
        q = np.ascontiguousarray(query.reshape(1, -1), dtype=np.float32)
        if not self.is_ann:
            params = None if allowed is None else faiss.SearchParameters(sel=faiss.IDSelectorBatch(allowed))  # type: ignore[call-arg]  # faiss stubs are partial
            scores, ids = self._index.search(q, k, params=params)
        elif allowed is None:
            scores, ids = self._index.search(q, k, params=faiss.SearchParametersIVF(nprobe=self.nprobe))  # type: ignore[call-arg]  # faiss stubs are partial
        elif len(allowed) <= self.exact_subset_limit:
            return self._search_subset(q, k, allowed)
        else:
            share = len(allowed) / total
            nprobe = min(self.nlist, math.ceil(self.nprobe / min(1.0, share)))
            selector, _keep = _selector(allowed)
            params = faiss.SearchParametersIVF(sel=selector, nprobe=nprobe)  # type: ignore[call-arg]  # faiss stubs are partial
            scores, ids = self._index.search(q, k, params=params)
        # FAISS leaves the order of equal scores to its kernels; ties go to the lower row id, as everywhere
        return sorted(((int(i), float(s)) for i, s in zip(ids[0], scores[0]) if i != -1), key=lambda r: (-r[1], r[0]))

    def _search_subset(self, q: Vectors, k: int, allowed: Ids) -> list[tuple[int, float]]:
        """Exact top-k over just the allowed vectors (ids missing from the index are skipped)."""
        wanted = np.unique(np.asarray(allowed, dtype=np.int64))
        try:
            vecs = self._index.reconstruct_batch(wanted)
        except RuntimeError:  # some id is not indexed: fall back to one id at a time
            keep, rows = [], []
            for rid in wanted.tolist():
                try:
                    rows.append(self._index.reconstruct(rid))
                    keep.append(rid)
                except RuntimeError:
                    continue
            if not rows:
                return []
            wanted, vecs = np.asarray(keep, dtype=np.int64), np.vstack(rows)
        scores = vecs @ q[0]
        k = min(k, len(scores))
        top = np.argpartition(-scores, k - 1)[:k]
        ranked = sorted(top.tolist(), key=lambda i: (-scores[i], wanted[i]))
        return [(int(wanted[i]), float(scores[i])) for i in ranked]

    # -- persistence ------------------------------------------------------------
    def save(self, path: Path) -> None:
        tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        self.optimize()
        with self._rw.read():
            faiss.write_index(self._index, str(tmp))
        tmp.replace(path)

    @classmethod
    def load(cls, path: Path, dim: int) -> DenseIndex:
        index = cls(dim)
        loaded = faiss.read_index(str(path))
        if loaded.d != dim:
            raise ValueError(f"index dimension {loaded.d} != {dim}")
        if isinstance(loaded, faiss.IndexIVF):
            if loaded.direct_map.type != faiss.DirectMap.Hashtable:  # type: ignore[attr-defined]  # faiss stubs are partial
                loaded.set_direct_map_type(faiss.DirectMap.Hashtable)  # type: ignore[attr-defined]  # faiss stubs are partial
            # the list count records the size it was trained for; retrain after 4x growth
            index._trained_size = max(index.ann_threshold + 1, round((loaded.nlist / 2) ** 2))
        index._index = loaded
        return index


def _train_ivf(vecs: Vectors, dim: int) -> Any:
    nlist = choose_nlist(len(vecs))
    sample_size = min(len(vecs), nlist * _TRAIN_POINTS_PER_LIST)
    rng = np.random.default_rng(_SEED)
    sample = vecs[np.sort(rng.choice(len(vecs), sample_size, replace=False))]
    quantizer = faiss.IndexFlatIP(dim)
    ivf = faiss.IndexIVFFlat(quantizer, dim, nlist, faiss.METRIC_INNER_PRODUCT)
    ivf.cp.niter = 10
    ivf.cp.seed = _SEED
    ivf.cp.max_points_per_centroid = _TRAIN_POINTS_PER_LIST
    ivf.cp.min_points_per_centroid = 1  # tiny thresholds in tests; real sizes give >= 40 per list
    ivf.train(sample)  # the Python wrapper keeps the quantiser alive as long as the index
    ivf.set_direct_map_type(faiss.DirectMap.Hashtable)  # type: ignore[attr-defined]  # faiss stubs are partial
    return ivf


def _selector(allowed: Ids) -> tuple[Any, Any]:
    """An ID selector for ``allowed`` and the buffer it points into (keep it alive while searching).

    Row ids are small and dense, so a bitmap (one bit per id up to the largest)
    is cheaper to build and test than a hash set; huge ids fall back to a set.
    """
    top = int(allowed.max())
    if top < (1 << 27):  # a bitmap of at most 16 MiB
        bits = np.zeros(top + 1, dtype=bool)
        bits[allowed] = True
        packed = np.packbits(bits, bitorder="little")
        return faiss.IDSelectorBitmap(len(packed), faiss.swig_ptr(packed)), packed
    return faiss.IDSelectorBatch(allowed), allowed
