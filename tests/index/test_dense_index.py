"""DenseIndex: exact below the ANN threshold, IVF above it (recall, remove, save/load, scopes)."""

from __future__ import annotations

from pathlib import Path

import faiss
import numpy as np
import pytest

from omnimem.index.dense import DenseIndex, choose_nlist

DIM = 32


def clustered(n: int, *, seed: int = 0, centres: int = 40, noise: float = 0.5) -> np.ndarray:
    """Unit vectors around random centres: the shape of real embedding clouds."""
    rng = np.random.default_rng(seed)
    cent = np.random.default_rng(99).standard_normal((centres, DIM)).astype(np.float32)
    x = cent[rng.integers(0, centres, n)] + noise * rng.standard_normal((n, DIM)).astype(np.float32)
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def exact_top(x: np.ndarray, ids: np.ndarray, q: np.ndarray, k: int) -> list[int]:
    scores = x @ q
    order = np.argsort(-scores, kind="stable")[:k]
    return ids[order].tolist()


def recall(index: DenseIndex, x: np.ndarray, ids: np.ndarray, queries: np.ndarray, k: int = 20) -> float:
    hits = 0
    for q in queries:
        got = {rid for rid, _ in index.search(q, k)}
        hits += len(got & set(exact_top(x, ids, q, k)))
    return hits / (k * len(queries))


@pytest.fixture
def big() -> tuple[DenseIndex, np.ndarray, np.ndarray]:
    x = clustered(8000)
    ids = np.arange(100, 100 + len(x), dtype=np.int64)
    index = DenseIndex(DIM, ann_threshold=2000, exact_subset_limit=500)
    for start in range(0, len(x), 1000):  # chunked, like a rebuild from the hot tier
        index.add(ids[start : start + 1000], x[start : start + 1000])
    return index, x, ids


def test_small_index_stays_exact() -> None:
    x = clustered(1500)
    ids = np.arange(len(x), dtype=np.int64)
    index = DenseIndex(DIM, ann_threshold=2000)
    index.add(ids, x)
    q = clustered(1, seed=7)[0]
    assert not index.is_ann
    assert [rid for rid, _ in index.search(q, 10)] == exact_top(x, ids, q, 10)


def test_converts_to_ivf_lazily_with_high_recall(big: tuple[DenseIndex, np.ndarray, np.ndarray]) -> None:
    index, x, ids = big
    assert not index.is_ann  # adding never trains
    queries = clustered(50, seed=3)
    r = recall(index, x, ids, queries)
    assert index.is_ann and index.nlist == choose_nlist(len(x))
    assert r >= 0.98
    scores = [s for _, s in index.search(queries[0], 20)]
    assert scores == sorted(scores, reverse=True)


def test_ivf_remove(big: tuple[DenseIndex, np.ndarray, np.ndarray]) -> None:
    index, x, ids = big
    index.optimize()
    q = x[10]
    assert index.search(q, 1)[0][0] == ids[10]
    index.remove([int(ids[10]), int(ids[11])])
    assert len(index) == len(x) - 2
    found = {rid for rid, _ in index.search(q, 50)}
    assert int(ids[10]) not in found and int(ids[11]) not in found
    assert int(ids[10]) not in {rid for rid, _ in index.search(q, 5, np.array([ids[10], ids[12]]))}


def test_ivf_save_load_roundtrip(big: tuple[DenseIndex, np.ndarray, np.ndarray], tmp_path: Path) -> None:
    index, x, ids = big
    q = clustered(1, seed=11)[0]
    before = index.search(q, 20)
    index.save(tmp_path / "dense.faiss")
    loaded = DenseIndex.load(tmp_path / "dense.faiss", DIM)
    assert loaded.is_ann and len(loaded) == len(x)
    assert loaded.search(q, 20) == before
    loaded.remove([before[0][0]])  # the direct map survives the round trip
    assert before[0][0] not in {rid for rid, _ in loaded.search(q, 20)}
    with pytest.raises(ValueError):
        DenseIndex.load(tmp_path / "dense.faiss", DIM + 1)


@pytest.mark.parametrize("size", [7, 400, 3000])
def test_ivf_scope_filter(big: tuple[DenseIndex, np.ndarray, np.ndarray], size: int) -> None:
    """Small scopes are brute-forced (exact); large ones scan IVF with a selector (near-exact)."""
    index, x, ids = big
    index.optimize()
    rng = np.random.default_rng(size)
    pos = np.sort(rng.choice(len(x), size, replace=False))
    allowed = ids[pos]
    hits = total = 0
    for q in clustered(20, seed=5):
        got = index.search(q, 10, allowed)
        assert {rid for rid, _ in got} <= set(allowed.tolist())
        want = exact_top(x[pos], allowed, q, 10)
        if size <= index.exact_subset_limit:
            assert [rid for rid, _ in got] == want
        hits += len({rid for rid, _ in got} & set(want))
        total += len(want)
    assert hits / total >= 0.98


def test_subset_skips_ids_not_indexed(big: tuple[DenseIndex, np.ndarray, np.ndarray]) -> None:
    index, x, ids = big
    index.optimize()
    got = index.search(x[0], 5, np.array([ids[0], 10**9], dtype=np.int64))
    assert [rid for rid, _ in got] == [int(ids[0])]


def test_retrains_after_growth() -> None:
    index = DenseIndex(DIM, ann_threshold=500)
    x = clustered(2400, seed=4)
    ids = np.arange(len(x), dtype=np.int64)
    index.add(ids[:600], x[:600])
    index.optimize()
    first = index.nlist
    index.add(ids[600:], x[600:])
    index.optimize()
    assert index.nlist == choose_nlist(len(x)) > first
    assert len(index) == len(x)
    assert index.search(x[2000], 1)[0][0] == 2000


def test_matches_faiss_flat_below_threshold_with_scope() -> None:
    x = clustered(300)
    ids = np.arange(len(x), dtype=np.int64)
    index = DenseIndex(DIM)
    index.add(ids, x)
    allowed = ids[::3]
    flat = faiss.IndexFlatIP(DIM)
    flat.add(x[::3])
    _, want = flat.search(x[:1], 5)
    assert [rid for rid, _ in index.search(x[0], 5, allowed)] == allowed[want[0]].tolist()


def test_adds_and_removes_during_training_are_kept() -> None:
    import threading

    x = clustered(3000, seed=9)
    ids = np.arange(len(x), dtype=np.int64)
    index = DenseIndex(DIM, ann_threshold=1000)
    index.add(ids[:2000], x[:2000])
    trainer = threading.Thread(target=index.optimize)
    trainer.start()
    for start in range(2000, 3000, 100):  # while it trains (or just after): never blocked for the training
        index.add(ids[start:start + 100], x[start:start + 100])
    index.remove(ids[:50])
    trainer.join()
    index.optimize()
    assert index.is_ann and len(index) == len(x) - 50
    assert {i for i, _ in index.search(x[2500], 5)} >= {2500}
    assert all(i >= 50 for i, _ in index.search(x[10], 20))


def test_equal_scores_are_ordered_by_row_id() -> None:
    """Identical texts give identical vectors: their order is the row ids', whatever FAISS's kernels do."""
    index = DenseIndex(8)
    same = np.zeros((6, 8), dtype=np.float32)
    same[:, 0] = 1.0
    other = np.zeros((1, 8), dtype=np.float32)
    other[0, 1] = 1.0
    index.add([40, 7, 23, 3, 90, 12], same)
    index.add([5], other)
    query = np.asarray([1.0, 0.2, 0, 0, 0, 0, 0, 0], dtype=np.float32)
    assert [rid for rid, _ in index.search(query, 7)] == [3, 7, 12, 23, 40, 90, 5]
    assert [rid for rid, _ in index.search(query, 7, np.asarray([90, 3, 23, 5]))] == [3, 23, 90, 5]
