"""SparseIndex: BM25 in segments that takes adds and deletes and scores like a from-scratch bm25s index."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import bm25s
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from omnimem.index import sparse as sparse_module
from omnimem.index.sparse import SparseIndex, tokenize

WORDS = ("apple banana cherry lake camping guitar painting sunset river mountain bicycle coffee "
         "museum violin garden tennis pottery sailing novel bakery").split()


def corpus(n: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 12))) for _ in range(n)]


def bm25s_top(texts: dict[int, str], query: str, k: int) -> list[tuple[int, float]]:
    """A bm25s index over every live document, best first, equal scores by id (also across the cut)."""
    ids = sorted(texts)
    model = bm25s.BM25()
    model.index(tokenize([texts[i] for i in ids]), show_progress=False)
    scores = np.asarray(model.get_scores(tokenize([query])[0]), dtype=np.float32)
    ranked = sorted(range(len(ids)), key=lambda i: (-scores[i], ids[i]))[:k]
    return [(ids[i], float(scores[i])) for i in ranked if scores[i] > 0]


def test_scores_equal_bm25s_from_scratch() -> None:
    texts = dict(enumerate(corpus(300)))
    index = SparseIndex()
    index.reset(list(texts), list(texts.values()))
    for query in ("camping lake", "violin violin garden", "sunset over the river", "apple"):
        assert index.search(query, 20) == bm25s_top(texts, query, 20)


def test_adds_and_deletes_score_like_a_fresh_index_over_the_live_documents() -> None:
    texts = corpus(400, seed=1)
    index = SparseIndex(merge_factor=4)
    live: dict[int, str] = {}
    rng = random.Random(5)
    for start in range(0, 400, 25):  # batches of adds, each followed by some deletes
        batch = list(range(start, start + 25))
        index.add(batch, [texts[i] for i in batch])
        live.update({i: texts[i] for i in batch})
        gone = rng.sample(sorted(live), 6)
        assert sorted(r for r, _ in index.remove(gone)) == sorted(gone)
        for rid in gone:
            del live[rid]
    assert index.merges > 0 and index.segments <= 6  # merged as it grew, never one segment per add
    assert len(index) == len(live)
    for query in ("camping lake", "coffee bakery novel", "tennis"):
        assert index.search(query, 30) == bm25s_top(live, query, 30)


def test_a_deleted_document_is_never_returned_even_before_any_merge() -> None:
    index = SparseIndex()
    index.add([1, 2, 3], ["purple elephant", "purple giraffe", "green frog"])
    index.remove([1])
    assert [rid for rid, _ in index.search("purple elephant", 10)] == [2]
    index.add([1], ["green frog again"])  # a re-added id with a new text: only the new text counts
    assert [rid for rid, _ in index.search("elephant", 10)] == []


def test_scope_filter_is_exact() -> None:
    texts = dict(enumerate(corpus(200, seed=2)))
    index = SparseIndex()
    index.reset(list(texts), list(texts.values()))
    allowed = np.arange(0, 200, 7, dtype=np.int64)
    got = index.search("guitar painting", 50, allowed)
    assert {rid for rid, _ in got} <= set(allowed.tolist())
    full = index.search("guitar painting", 200)
    assert got == [(rid, s) for rid, s in full if rid in set(allowed.tolist())][:50]


def test_save_compacts_and_drops_removed_words(tmp_path: Path) -> None:
    index = SparseIndex()
    index.add([1, 2], ["secret xylophonist", "ordinary note"])
    index.add([3], ["another ordinary note"])
    index.remove([1])
    assert index.save(tmp_path)
    words = json.loads((tmp_path / "bm25" / "vocab.json").read_text())
    assert not any("xylophon" in w for w in words) and "ordinari" in words
    assert json.loads((tmp_path / "bm25" / "omnimem_ids.json").read_text()) == [2, 3]
    loaded = SparseIndex.load(tmp_path)
    assert loaded.search("ordinary note", 5) == index.search("ordinary note", 5)
    assert loaded.search("xylophonist", 5) == []


def test_source_builds_lazily_for_standalone_use() -> None:
    texts = corpus(50, seed=3)
    index = SparseIndex(lambda: enumerate(texts))
    assert index.stale
    assert index.search("lake", 5) == bm25s_top(dict(enumerate(texts)), "lake", 5)


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.integers(0, 59)), min_size=1, max_size=40))
def test_any_mix_of_adds_and_removes_matches_a_fresh_index(ops: list[tuple[bool, int]]) -> None:
    texts = corpus(60, seed=4)
    index = SparseIndex(merge_factor=2)
    live: dict[int, str] = {}
    for is_add, rid in ops:
        if is_add:
            index.add([rid], [texts[rid]])
            live[rid] = texts[rid]
        else:
            index.remove([rid])
            live.pop(rid, None)
    assert sorted(index.rids().tolist()) == sorted(live)
    if live:
        for query in ("camping", "museum violin sailing"):
            assert index.search(query, 10) == bm25s_top(live, query, 10)


def test_background_merges_keep_every_change_made_meanwhile() -> None:
    texts = corpus(600, seed=6)
    index = SparseIndex(merge_factor=2, background_at=40)  # merges of 40+ documents run in a thread
    live: dict[int, str] = {}
    rng = random.Random(8)
    for start in range(0, 600, 10):
        batch = list(range(start, start + 10))
        index.add(batch, [texts[i] for i in batch])
        live.update({i: texts[i] for i in batch})
        gone = rng.sample(sorted(live), 3)  # deletes land while a merge may be running
        index.remove(gone)
        for rid in gone:
            del live[rid]
        assert not {rid for rid, _ in index.search("camping lake", 50)} - set(live)
    index.settle()
    assert index.merges > 0 and sorted(index.rids().tolist()) == sorted(live)
    for query in ("camping lake", "coffee bakery novel", "tennis"):
        assert index.search(query, 30) == bm25s_top(live, query, 30)


def test_a_small_scope_is_scored_from_its_own_documents_with_identical_scores(monkeypatch: Any) -> None:
    """One user's few documents among many take the scoped path; its scores are the whole-segment path's."""
    texts = corpus(4000, seed=11)
    index = SparseIndex(merge_factor=4)
    for start in range(0, 4000, 500):  # several segments, some deletes
        batch = list(range(start, start + 500))
        index.add(batch, texts[start:start + 500])
    index.remove(list(range(0, 4000, 97)))
    rng = random.Random(3)
    scopes = [sorted(rng.sample(range(4000), size)) for size in (1, 7, 60, 300)]
    queries = ("camping lake", "violin violin garden", "sunset river mountain bicycle", "unknownword", "apple")
    calls: list[int] = []
    score_few = sparse_module._score_few

    def spy(seg: Any, docs: Any, *rest: Any) -> Any:
        calls.append(len(docs))
        return score_few(seg, docs, *rest)

    monkeypatch.setattr(sparse_module, "_score_few", spy)
    scoped = {(q, i): index.search(q, 25, scope) for q in queries for i, scope in enumerate(scopes)}
    assert calls  # the scoped path ran
    monkeypatch.setattr(sparse_module, "SCOPED_FRACTION", 0)  # every search scores whole segments
    assert any(scoped.values())
    for (q, i), hits in scoped.items():
        assert hits == index.search(q, 25, scopes[i])
        assert all(rid in scopes[i] and rid % 97 for rid, _ in hits)


def test_documents_tied_across_the_cut_go_to_the_lower_row_ids() -> None:
    """Which of many equal documents make the top k is decided by row id, not by numpy's selection kernel."""
    index = SparseIndex()
    rids = list(range(500, 0, -1))  # added in reverse, so neither insertion nor position order is row order
    index.add(rids, ["the same plain words" if r % 3 else "the same plain words here" for r in rids])
    got = index.search("same plain", 10)
    same = sorted(r for r in rids if r % 3)  # the shorter documents score higher, all equally
    assert [r for r, _ in got] == same[:10] and len({s for _, s in got}) == 1


def test_words_match_across_their_forms():
    """Terms are Porter stems (PyStemmer), on both backends' postings alike (omnimem.text.tokenize)."""
    index = SparseIndex()
    index.add([1, 2, 3], ["I spent Saturday painting", "she paints harbours", "a bowl of soup"])
    assert {rid for rid, _ in index.search("paint", 5)} == {1, 2}
    assert {rid for rid, _ in index.search("painted harbour", 5)} == {1, 2}


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(st.sampled_from([*"aábc dé.'-_9Ü\u0130\n", "the ", "The ", "running ", "RUNS ", "ß"]),
                         max_size=30).map("".join), max_size=4))
def test_tokens_are_bm25s_tokens(texts: list[str]) -> None:
    """omnimem.text.tokenize writes out bm25s.tokenize's rules: the same tokens for any text."""
    stemmer = sparse_module.tokenize.__globals__["_stemmer"]()
    assert tokenize(texts) == bm25s.tokenize(texts, stopwords="en", stemmer=stemmer, return_ids=False,
                                             show_progress=False)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 6), st.integers(0, 3)), min_size=1, max_size=25))
def test_segments_hold_the_postings_scipy_builds(ops: list[tuple[int, int]]) -> None:
    """Built and merged by hand, a segment's postings equal a scipy matrix of its live documents' term counts
    (canonical: each term's documents in order, no duplicates), whatever the order of adds and deletes."""
    import scipy.sparse

    texts = corpus(200, seed=9)
    index = SparseIndex(merge_factor=2)
    rng = random.Random(len(ops))
    live: dict[int, str] = {}
    for size, drop in ops:
        batch = rng.sample(range(200), size)  # row ids in any order, some already indexed (replaced)
        index.add(batch, [texts[r] for r in batch])
        live.update({r: texts[r] for r in batch})
        gone = rng.sample(sorted(live), min(drop, len(live)))
        index.remove(gone)
        for r in gone:
            del live[r]
        for seg in index._segments:
            assert list(seg.rids) == sorted(seg.rids)
            canonical = scipy.sparse.csc_matrix((seg.postings.data, seg.postings.indices, seg.postings.indptr),
                                                shape=(seg.postings.rows, len(seg.postings.indptr) - 1))
            assert canonical.has_canonical_format  # each term's documents ascending, each once
    index.compact()
    if not live:
        return
    [seg] = index._segments
    rids = sorted(live)
    assert seg.rids.tolist() == rids
    rows, cols = [], []
    for row, rid in enumerate(rids):
        for term in tokenize([live[rid]])[0]:
            rows.append(row)
            cols.append(index._vocab[term])
    expected = scipy.sparse.csc_matrix((np.ones(len(rows), dtype=np.float32), (rows, cols)),
                                       shape=(len(rids), len(index._vocab)))
    expected.sum_duplicates()
    for name in ("indptr", "indices", "data"):
        assert getattr(seg.postings, name).tolist() == getattr(expected, name).tolist(), name
