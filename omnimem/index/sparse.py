"""BM25 over unit texts that takes inserts and deletes without a rebuild.

Documents are tokenised with bm25s's rules (lower case, English stop words:
:func:`omnimem.text.tokenize`) and stemmed with PyStemmer, as before; the retriever drops a full English stop
list from queries first (:func:`omnimem.text.content_words`). A store of another ``language`` tokenises
its documents and queries by that language's rules instead (:func:`omnimem.text.tokenize_in`; ``auto``:
each text by the language detected for it); the index records its language and loads only for the same one.
Instead of bm25s's static index, which bakes the corpus statistics into every stored score, the postings
live in segments (document x term matrices of term counts, in compressed sparse column arrays):

- an add builds a small segment from just the new documents; segments of
  similar size are merged (the tail merges into its neighbour once it reaches
  1/``merge_factor`` of its size), so a document is merged O(log n) times and
  a search visits O(log n) segments; large merges run in a background thread
  and swap in when done;
- a delete clears the document's bit in its segment's live mask at once, so
  it can never be returned; its postings go at the next merge or save;
- scores are computed at query time from the live corpus: document
  frequencies by counting live postings of the query terms, the document
  count and average length from running sums. Every segment is therefore
  scored with the same global statistics, and a score equals what a
  from-scratch BM25 over the live documents gives (bm25s's default "lucene"
  variant, k1 1.5, b 0.75, same float rounding: the tests compare them).

Scope filtering keeps only admitted row ids, so it is exact. Each document
may carry an integer tag for the caller (the index manager keeps each unit's
scope group there, to find the units whose context a delete changes).
"""

from __future__ import annotations

import json
import math
import os
import shutil
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from omnimem.index.rwlock import RWLock
from omnimem.text import ENGLISH, tokenize, tokenize_in  # tokenize: the tests import it from here

TextSource = Callable[[], Iterable[tuple[int, str]]]
Ids = npt.NDArray[np.int64]
Positions = npt.NDArray[np.int32] | npt.NDArray[np.int64]  # int32 while they fit, as scipy.sparse does
K1 = 1.5
B = 0.75
MERGE_FACTOR = 8
BACKGROUND_AT = 50_000  # documents: merges this large run in a background thread
# A search admitting fewer than 1/SCOPED_FRACTION of a segment's documents scores only those (binary search
# in each query term's postings) instead of the whole segment: one user's units among millions.
SCOPED_FRACTION = 8
SPARSE_COLUMNS = 4  # a segment using under 1/SPARSE_COLUMNS of the vocabulary's terms keeps a column map
_FORMAT = 2  # omnimem's own segment files (format 1 was a bm25s folder)


@dataclass(frozen=True, eq=False)
class _Postings:
    """A documents x terms matrix of term counts in compressed sparse column form (``scipy.sparse.csc_matrix``'s
    three arrays and meaning, always canonical: each column's documents ascending, each once).

    Dense columns (``columns`` None): term ``t``'s documents are ``indices[indptr[t]:indptr[t + 1]]``; term ids
    at or past ``len(indptr) - 1`` (newer than the segment) have none. Sparse columns, for a segment that uses
    few of the vocabulary's terms (the small segments a one-turn add makes and merges): ``columns`` maps each
    term it has to its column, so building and merging it costs its own postings, not the vocabulary's size.
    Plain arrays, so a one-document segment costs no format checks; :func:`_postings` is where they are made.
    """

    indptr: Positions
    indices: Positions
    data: npt.NDArray[np.float32]
    rows: int
    columns: dict[int, int] | None = None

    def span(self, term: int) -> tuple[int, int]:
        """Where ``term``'s postings are in ``indices`` and ``data`` (an empty span when it has none)."""
        if self.columns is not None:
            col = self.columns.get(term)
            if col is None:
                return 0, 0
        elif term + 1 >= len(self.indptr):
            return 0, 0
        else:
            col = term
        return int(self.indptr[col]), int(self.indptr[col + 1])

    def terms(self) -> Ids:
        """The term of each posting, in order."""
        names = np.arange(len(self.indptr) - 1, dtype=np.int64) if self.columns is None \
            else np.fromiter(self.columns, dtype=np.int64, count=len(self.columns))
        out: Ids = np.repeat(names, np.diff(self.indptr))
        return out


@dataclass(eq=False)
class _Segment:
    """Postings of some documents; everything but ``live`` is immutable once built."""

    rids: Ids  # ascending
    lengths: npt.NDArray[np.float64]  # tokens per document
    tags: Ids
    postings: _Postings  # scoped scoring binary-searches a term's documents: they are in order
    live: npt.NDArray[np.bool_]

    def __len__(self) -> int:
        return len(self.rids)

    def positions(self, rids: Ids) -> npt.NDArray[np.intp]:
        """Positions of the live documents among ``rids`` (ids not here, or dead, are skipped)."""
        if len(self.rids) == 0 or len(rids) == 0:
            return np.zeros(0, dtype=np.intp)
        pos = np.searchsorted(self.rids, rids)
        inside = pos < len(self.rids)
        pos = pos[inside]
        pos = pos[self.rids[pos] == rids[inside]]
        found: npt.NDArray[np.intp] = pos[self.live[pos]]
        return found


class SparseIndex:
    """BM25 keyed by unit row id, in segments; safe for concurrent searches and one writer."""

    def __init__(self, source: TextSource | None = None, *, merge_factor: int = MERGE_FACTOR,
                 background_at: int = BACKGROUND_AT, language: str = ENGLISH) -> None:
        self._source = source
        self.language = language  # what documents and queries are tokenised by (omnimem.text.tokenize_in)
        self.merge_factor = merge_factor
        self._vocab: dict[str, int] = {}
        self._segments: list[_Segment] = []
        self._count = 0  # live documents
        self._total_len = 0  # their tokens
        self._stale = source is not None  # built from ``source`` at first use
        self._rw = RWLock()  # searches share; a swap or a delete's bit flip is exclusive
        self._writer = threading.RLock()  # one change at a time; its slow part runs outside ``_rw``
        self.merges = 0  # segment merges so far (for tests and stats)
        self.background_at = background_at
        self._merging = False
        self._merger: threading.Thread | None = None
        # (segment list, live count, live ids): the list is replaced on every add or merge, and a
        # delete lowers the count, so either tells the ids changed
        self._live_cache: tuple[list[_Segment], int, Ids] | None = None

    @property
    def stale(self) -> bool:
        return self._stale

    @property
    def segments(self) -> int:
        return len(self._segments)

    def __len__(self) -> int:
        self._ensure()
        return self._count

    def invalidate(self) -> None:
        """Rebuild from ``source`` at the next use (only for an index made with one)."""
        if self._source is None:
            raise ValueError("this index has no source to rebuild from")
        with self._writer:
            self._stale = True

    def _ensure(self) -> None:
        if not self._stale:
            return
        with self._writer:
            if not self._stale or self._source is None:
                return
            pairs = list(self._source())
            self.reset([rid for rid, _ in pairs], [text for _, text in pairs])
            self._stale = False

    # -- changes ------------------------------------------------------------------
    def reset(self, rids: Sequence[int], texts: Sequence[str], tags: Sequence[int] | None = None) -> None:
        """Replace everything with these documents (one segment)."""
        with self._writer:
            vocab: dict[str, int] = {}
            segment = self._build(rids, texts, tags, vocab)
            with self._rw.write():
                self._vocab = vocab
                self._segments = [segment] if len(segment) else []
                self._count = len(segment)
                self._total_len = int(segment.lengths.sum())

    def add(self, rids: Sequence[int], texts: Sequence[str], tags: Sequence[int] | None = None) -> None:
        """Index new documents; a row id already indexed is replaced (its new text wins)."""
        if not len(rids):
            return
        self._ensure()
        with self._writer:
            if min(rids) <= max((int(seg.rids[-1]) for seg in self._segments if len(seg)), default=-1):
                self.remove(rids)  # some may be indexed already (a new row id is above every one indexed)
            segment = self._build(rids, texts, tags, self._vocab)  # grows the vocabulary: new ids only
            with self._rw.write():
                self._segments = [*self._segments, segment]
                self._count += len(segment)
                self._total_len += int(segment.lengths.sum())
            self._merge_tail()

    def remove(self, rids: Iterable[int]) -> list[tuple[int, int]]:
        """Delete documents at once; returns (row id, tag) of those that were indexed."""
        wanted = np.unique(np.asarray(list(rids), dtype=np.int64))
        if not len(wanted):
            return []
        self._ensure()
        out: list[tuple[int, int]] = []
        with self._writer, self._rw.write():
            for seg in self._segments:
                pos = seg.positions(wanted)
                if len(pos):
                    seg.live[pos] = False
                    self._count -= len(pos)
                    self._total_len -= int(seg.lengths[pos].sum())
                    out.extend(zip(seg.rids[pos].tolist(), seg.tags[pos].tolist()))
        return out

    def compact(self) -> None:
        """Merge every segment into one without dead documents or unused terms (before a save)."""
        self._ensure()
        with self._writer:
            if len(self._segments) == 1 and self._segments[0].live.all() and self._all_terms_used():
                return
            vocab: dict[str, int] = {}
            merged = self._merged(self._segments, vocab)
            with self._rw.write():
                self._vocab = vocab
                self._segments = [merged] if len(merged) else []

    def _all_terms_used(self) -> bool:
        postings = self._segments[0].postings
        counts = np.diff(postings.indptr)
        return bool(postings.columns is None and len(counts) == len(self._vocab) and (counts > 0).all())

    def _merge_tail(self) -> None:
        """Merge the newest segment into the one before while it is at least 1/merge_factor its size.

        Small merges happen here, in the adding thread. A merge of ``background_at``
        documents or more (rare: the tail must reach an eighth of a large segment)
        runs in a background thread, so no add, and no search waiting for one,
        pays for it; the tail keeps growing meanwhile and merges after.
        """
        while not self._merging and len(self._segments) >= 2 and \
                len(self._segments[-1]) * self.merge_factor >= len(self._segments[-2]):
            a, b = self._segments[-2], self._segments[-1]
            if len(a) + len(b) >= self.background_at:
                self._merging = True
                self._merger = threading.Thread(target=self._merge_behind, args=(a, b), daemon=True,
                                                name="omnimem-bm25-merge")
                self._merger.start()
                return
            merged = self._merged([a, b], None)
            with self._rw.write():
                # the writer lock kept deletes out while we built: the merged segment holds their live documents
                self._segments = [*self._segments[:-2], *([merged] if len(merged) else [])]
            self.merges += 1

    def _merge_behind(self, a: _Segment, b: _Segment) -> None:
        """Merge ``a`` and ``b`` without the writer lock, then swap them under it (deletes since re-applied)."""
        try:
            merged = self._merged([a, b], None)
            with self._writer:
                segments = self._segments
                at = next((i for i in range(len(segments) - 1) if segments[i] is a and segments[i + 1] is b), None)
                if at is None:  # a reset or compaction replaced them meanwhile
                    return
                alive = np.concatenate([a.rids[a.live], b.rids[b.live]])
                merged.live[:] = np.isin(merged.rids, alive)  # deleted (or replaced) while we merged
                with self._rw.write():
                    self._segments = [*segments[:at], merged, *segments[at + 2:]]
                self.merges += 1
        finally:
            with self._writer:
                self._merging = False
                self._merge_tail()

    def settle(self) -> None:
        """Wait for a background merge to finish (tests; saving compacts anyway)."""
        while True:
            merger = self._merger
            if merger is None or not merger.is_alive():
                return
            merger.join()

    def _build(self, rids: Sequence[int], texts: Sequence[str], tags: Sequence[int] | None,
               vocab: dict[str, int]) -> _Segment:
        tokens = tokenize_in(list(texts), self.language) if texts else []
        ids = [[vocab.setdefault(t, len(vocab)) for t in doc] for doc in tokens]
        lengths = np.fromiter((len(d) for d in ids), dtype=np.float64, count=len(ids))
        docs = np.repeat(np.arange(len(ids), dtype=np.int64), lengths.astype(np.int64))
        terms = np.fromiter((t for d in ids for t in d), dtype=np.int64, count=int(lengths.sum()))
        rid_arr = np.asarray(rids, dtype=np.int64)
        tag_arr = np.zeros(len(rid_arr), dtype=np.int64) if tags is None else np.asarray(tags, dtype=np.int64)
        rid_arr, lengths, tag_arr, docs, _ = _in_rid_order(rid_arr, lengths, tag_arr, docs)
        n = max(len(ids), 1)  # one posting per (term, document) with its count, in (term, document) order
        keys, counts = np.unique(terms * n + docs, return_counts=True)
        postings = _postings(keys % n, keys // n, counts.astype(np.float32), len(ids), len(vocab))
        return _Segment(rid_arr, lengths, tag_arr, postings, np.ones(len(rid_arr), dtype=bool))

    def _merged(self, segments: Sequence[_Segment], vocab: dict[str, int] | None) -> _Segment:
        """The live documents of ``segments`` in one segment; ``vocab`` given: renumber terms into it.

        Works on the postings' own arrays: each kept posting gets its document's new position, and the
        postings are put in (term, document) order again. A tail merge after a one-turn add is a few
        hundred postings, where ``scipy.sparse.vstack`` would spend most of its time in format checks.
        """
        docs, terms, data, rids, lengths, tags = [], [], [], [], [], []
        base = 0
        for seg in segments:
            live = seg.live.copy()  # a background merge runs beside deletes: one snapshot of the mask
            position = np.cumsum(live) - 1 + base  # new position of each kept document
            matrix = seg.postings
            seg_docs = matrix.indices.astype(np.int64)
            seg_terms = matrix.terms()
            kept = live[seg_docs]
            docs.append(position[seg_docs[kept]])
            terms.append(seg_terms[kept])
            data.append(matrix.data[kept])
            rids.append(seg.rids[live])
            lengths.append(seg.lengths[live])
            tags.append(seg.tags[live])
            base += int(live.sum())
        all_docs = np.concatenate(docs) if docs else np.zeros(0, np.int64)
        all_terms = np.concatenate(terms) if terms else np.zeros(0, np.int64)
        all_data = np.concatenate(data) if data else np.zeros(0, np.float32)
        rid_arr = np.concatenate(rids) if rids else np.zeros(0, np.int64)
        length_arr = np.concatenate(lengths) if lengths else np.zeros(0)
        tag_arr = np.concatenate(tags) if tags else np.zeros(0, np.int64)
        width = len(self._vocab)
        if vocab is not None:  # keep only the terms some live document uses
            used = np.unique(all_terms)
            names = list(self._vocab)
            for new, old in enumerate(used.tolist()):
                vocab[names[old]] = new
            all_terms = np.searchsorted(used, all_terms)
            width = len(used)
        rid_arr, length_arr, tag_arr, all_docs, ordered = _in_rid_order(rid_arr, length_arr, tag_arr, all_docs)
        if ordered:  # segments in row-id order (the usual case): each term's postings are already
            sort = np.argsort(all_terms, kind="stable")  # in document order within each segment
        else:  # a replaced row id came back lower than others: documents renumbered, sort fully
            sort = np.argsort(all_terms * max(len(rid_arr), 1) + all_docs)
        postings = _postings(all_docs[sort], all_terms[sort], all_data[sort], len(rid_arr), width)
        return _Segment(rid_arr, length_arr, tag_arr, postings, np.ones(len(rid_arr), dtype=bool))

    # -- reads --------------------------------------------------------------------
    def rids(self) -> Ids:
        """Row ids of the live documents, ascending."""
        self._ensure()
        with self._rw.read():
            return self._live_rids().copy()

    def _live_rids(self) -> Ids:
        """Live row ids, ascending; remembered until the next change (callers hold ``_rw``)."""
        cached = self._live_cache
        if cached is not None and cached[0] is self._segments and cached[1] == self._count:
            return cached[2]
        if len(self._segments) == 1 and self._count == len(self._segments[0]):
            every = self._segments[0].rids
        else:  # each segment's ids are sorted: a stable sort merges the runs in about linear time
            parts = [seg.rids[seg.live] for seg in self._segments]
            every = np.sort(np.concatenate(parts), kind="stable") if parts else np.zeros(0, dtype=np.int64)
        self._live_cache = (self._segments, self._count, every)
        return every

    def with_tags(self, tags: Iterable[int]) -> list[tuple[int, int]]:
        """(row id, tag) of the live documents carrying one of ``tags``, by row id."""
        wanted = np.asarray(sorted(set(tags)), dtype=np.int64)
        out: list[tuple[int, int]] = []
        with self._rw.read():
            for seg in self._segments:
                pos = np.flatnonzero(np.isin(seg.tags, wanted) & seg.live)
                out.extend(zip(seg.rids[pos].tolist(), seg.tags[pos].tolist()))
        return sorted(out)

    def search(self, query: str, k: int, allowed: Iterable[int] | None = None) -> list[tuple[int, float]]:
        """Top ``k`` (id, BM25 score) with a positive score, best first (ties: lower id first)."""
        self._ensure()
        if k <= 0:
            return []
        terms = tokenize_in([query], self.language)[0]
        if not terms:
            return []
        admitted = None if allowed is None else np.unique(np.asarray(
            allowed if isinstance(allowed, np.ndarray) else list(allowed), dtype=np.int64))
        with self._rw.read():
            found_ids, found_scores = self._score(terms, admitted)
            if not len(found_ids):
                return []
            if len(found_ids) > k:
                found_ids, found_scores = _best(found_ids, found_scores, k)
        order = np.lexsort((found_ids, -found_scores))[:k]
        return [(int(found_ids[i]), float(found_scores[i])) for i in order]

    def _score(self, terms: list[str], admitted: Ids | None) -> tuple[Ids, npt.NDArray[np.float32]]:
        if self._count == 0:
            return np.zeros(0, np.int64), np.zeros(0, np.float32)
        term_ids = [self._vocab[t] for t in terms if t in self._vocab]  # repeats count, as in bm25s
        # global document frequencies: live postings of each query term over all segments
        df: dict[int, int] = {}
        for t in dict.fromkeys(term_ids):
            df[t] = sum(int(seg.live[_docs(seg, t)].sum()) for seg in self._segments)
        n = self._count
        avgdl = self._total_len / n
        idf = {t: np.float64(np.float32(math.log(1 + (n - d + 0.5) / (d + 0.5)))) for t, d in df.items()}
        ids_out, scores_out = [], []
        for seg in self._segments:
            if admitted is not None and len(admitted) * SCOPED_FRACTION < len(seg):
                found = _score_few(seg, seg.positions(admitted), term_ids, idf, avgdl)
                if found is not None:
                    ids_out.append(found[0])
                    scores_out.append(found[1])
                continue
            scores = np.zeros(len(seg), dtype=np.float32)
            touched = False
            for t in term_ids:
                pos, tf = _column(seg, t)
                if not len(pos):
                    continue
                touched = True
                scores[pos] += _term_scores(tf, seg.lengths[pos], idf[t], avgdl)
            if not touched:
                continue
            hit = np.flatnonzero(scores)
            hit = hit[seg.live[hit]]
            rids = seg.rids[hit]
            if admitted is not None:
                at = np.searchsorted(admitted, rids)
                ok = at < len(admitted)
                ok[ok] = admitted[at[ok]] == rids[ok]
                hit, rids = hit[ok], rids[ok]
            ids_out.append(rids)
            scores_out.append(scores[hit])
        if not ids_out:
            return np.zeros(0, np.int64), np.zeros(0, np.float32)
        return np.concatenate(ids_out), np.concatenate(scores_out)

    # -- persistence --------------------------------------------------------------
    def save(self, folder: Path) -> bool:
        """Compact and write the index under ``folder/bm25``; False when there is nothing current to save."""
        if self._stale:
            return False
        self.compact()
        with self._writer:
            tmp = folder / f".bm25.{os.getpid()}.{threading.get_ident()}.tmp"
            shutil.rmtree(tmp, ignore_errors=True)
            tmp.mkdir(parents=True)
            seg = self._segments[0] if self._segments else None
            width = len(self._vocab)
            matrix = seg.postings if seg is not None else _Postings(
                np.zeros(width + 1, np.int32), np.zeros(0, np.int32), np.zeros(0, np.float32), 0)
            assert matrix.columns is None  # compacted: every term of the vocabulary is used, so dense
            np.savez(tmp / "postings.npz", data=matrix.data, indices=matrix.indices, indptr=matrix.indptr,
                     shape=np.asarray((matrix.rows, len(matrix.indptr) - 1), dtype=np.int64),
                     rids=seg.rids if seg is not None else np.zeros(0, np.int64),
                     lengths=seg.lengths if seg is not None else np.zeros(0),
                     tags=seg.tags if seg is not None else np.zeros(0, np.int64))
            (tmp / "vocab.json").write_text(json.dumps(list(self._vocab)), encoding="utf-8")
            (tmp / "omnimem_ids.json").write_text(json.dumps(seg.rids.tolist() if seg is not None else []),
                                                  encoding="utf-8")
            fmt: dict[str, Any] = {"format": _FORMAT, "k1": K1, "b": B}
            if self.language != ENGLISH:  # English files stay as they were
                fmt["language"] = self.language
            (tmp / "format.json").write_text(json.dumps(fmt), encoding="utf-8")
            final = folder / "bm25"
            shutil.rmtree(final, ignore_errors=True)  # a folder cannot be replaced atomically: the
            tmp.replace(final)  # caller holds the index lock and writes state.json last
            return True

    @classmethod
    def load(cls, folder: Path, source: TextSource | None = None, *, language: str = ENGLISH) -> SparseIndex:
        """Load a saved index; the caller checks it is current. Raises ValueError for another format or
        another language."""
        final = folder / "bm25"
        fmt = json.loads((final / "format.json").read_text(encoding="utf-8")) if (final / "format.json").exists() \
            else {}
        if fmt.get("format") != _FORMAT:
            raise ValueError(f"BM25 files in {final} have another format ({fmt.get('format', 1)})")
        if fmt.get("language", ENGLISH) != language:
            raise ValueError(f"BM25 files in {final} are tokenised for language {fmt.get('language', ENGLISH)!r}")
        index = cls(source, language=language)
        with np.load(final / "postings.npz") as arrays:
            shape = tuple(int(x) for x in arrays["shape"])
            # written canonical by save (and by the scipy-based format-2 code before it)
            matrix = _Postings(arrays["indptr"], arrays["indices"], arrays["data"].astype(np.float32, copy=False),
                               shape[0])
            segment = _Segment(arrays["rids"], arrays["lengths"], arrays["tags"], matrix,
                               np.ones(shape[0], dtype=bool))
        index._vocab = {t: i for i, t in enumerate(json.loads((final / "vocab.json").read_text(encoding="utf-8")))}
        index._segments = [segment] if len(segment) else []
        index._count = len(segment)
        index._total_len = int(segment.lengths.sum())
        index._stale = False
        return index


def _term_scores(tf: npt.NDArray[np.float64], lengths: npt.NDArray[np.float64], idf: np.float64,
                 avgdl: float) -> npt.NDArray[np.float32]:
    """One query term's BM25 contribution to documents with term counts ``tf`` and ``lengths`` (float64, as
    bm25s computes it, then float32 as it sums): the one formula both scoring paths use."""
    tfc = tf / (K1 * ((1 - B) + B * lengths / avgdl) + tf)
    out: npt.NDArray[np.float32] = (idf * tfc).astype(np.float32)
    return out


def _best(ids: Ids, scores: npt.NDArray[np.float32], k: int) -> tuple[Ids, npt.NDArray[np.float32]]:
    """The ``k`` best documents by score, ties across the cut going to the lower row ids (earlier units).

    ``argpartition`` alone would keep an arbitrary subset of the documents
    tied at the ``k``-th score, and which one depends on the CPU (numpy picks
    another selection kernel with AVX2 or AVX-512): a common word ties
    hundreds of documents, so results would differ between machines.
    """
    kth = scores[np.argpartition(-scores, k - 1)[k - 1]]
    above = np.flatnonzero(scores > kth)
    tied = np.flatnonzero(scores == kth)
    keep = np.concatenate([above, tied[np.argsort(ids[tied], kind="stable")][: k - len(above)]])
    return ids[keep], scores[keep]


def _docs(seg: _Segment, term: int) -> Positions:
    """Document positions of ``term`` in ``seg``, in order (nothing for a term newer than the segment)."""
    a, b = seg.postings.span(term)
    docs: Positions = seg.postings.indices[a:b]
    return docs


def _score_few(seg: _Segment, docs: npt.NDArray[np.intp], term_ids: list[int], idf: dict[int, np.float64],
               avgdl: float) -> tuple[Ids, npt.NDArray[np.float32]] | None:
    """BM25 scores of the live documents at positions ``docs`` (ascending) of ``seg``, or None if none scores.

    For a search confined to a few documents (one user among many): each query term's postings are
    binary-searched for those documents instead of scored whole, so the cost follows the scope's size,
    not the corpus's. The arithmetic per document is the one :meth:`SparseIndex._score` does over a
    whole segment (same terms in the same order, the same float32 sums), so the scores are identical.
    """
    if not len(docs):
        return None
    scores = np.zeros(len(docs), dtype=np.float32)
    touched = False
    for t in term_ids:
        a, b = seg.postings.span(t)
        if a == b:
            continue
        column = seg.postings.indices[a:b]
        at = np.searchsorted(column, docs)
        inside = at < len(column)
        match = np.zeros(len(docs), dtype=bool)
        match[inside] = column[at[inside]] == docs[inside]
        if not match.any():
            continue
        touched = True
        tf = seg.postings.data[a + at[match]].astype(np.float64)
        scores[match] += _term_scores(tf, seg.lengths[docs[match]], idf[t], avgdl)
    if not touched:
        return None
    hit = np.flatnonzero(scores)
    return seg.rids[docs[hit]], scores[hit]


def _column(seg: _Segment, term: int) -> tuple[Positions, npt.NDArray[np.float64]]:
    """Document positions and counts of ``term`` in ``seg`` (nothing for a term newer than the segment)."""
    a, b = seg.postings.span(term)
    return seg.postings.indices[a:b], seg.postings.data[a:b].astype(np.float64)


def _in_rid_order(rids: Ids, lengths: npt.NDArray[np.float64], tags: Ids, docs: Ids
                  ) -> tuple[Ids, npt.NDArray[np.float64], Ids, Ids, bool]:
    """The documents in ascending row-id order, and the postings' document positions renumbered to match;
    last, whether they were in that order already (then everything comes back as it was)."""
    if len(rids) < 2 or bool((rids[1:] > rids[:-1]).all()):
        return rids, lengths, tags, docs, True
    order = np.argsort(rids, kind="stable")
    ranks = np.empty(len(order), dtype=np.int64)
    ranks[order] = np.arange(len(order), dtype=np.int64)
    return rids[order], lengths[order], tags[order], ranks[docs], False


def _postings(docs: Ids, terms: Ids, counts: npt.NDArray[np.float32], n_docs: int, width: int) -> _Postings:
    """The postings matrix of entries already in (term, document) order, one per pair; its columns sparse when
    it uses fewer than a quarter of the ``width`` terms."""
    starts = np.flatnonzero(np.concatenate(([True], terms[1:] != terms[:-1]))) if len(terms) else \
        np.zeros(0, dtype=np.int64)
    columns: dict[int, int] | None = None
    if len(starts) * SPARSE_COLUMNS < width:
        indptr: Positions = np.append(starts, len(terms)).astype(np.int64)
        columns = dict(zip(terms[starts].tolist(), range(len(starts))))
    else:
        indptr = np.zeros(width + 1, dtype=np.int64)
        np.cumsum(np.bincount(terms, minlength=width), out=indptr[1:])
    positions: Positions = docs
    if max(len(docs), n_docs) < np.iinfo(np.int32).max:
        indptr, positions = indptr.astype(np.int32), docs.astype(np.int32)
    return _Postings(indptr, positions, counts.astype(np.float32, copy=False), n_docs, columns)
