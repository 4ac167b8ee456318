"""BM25 over unit summaries with ``bm25s``, stemmed with PyStemmer.

bm25s builds a static index, so additions and deletions mark it stale and the
next search rebuilds it from the hot tier (the ``source`` callable). Scope
filtering zeroes the scores of other scopes before ranking, so it is exact.
"""

from __future__ import annotations

import json
import os
import shutil
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import numpy as np

TextSource = Callable[[], Iterable[tuple[int, str]]]
_STEMMER: Any = None


def _bm25s() -> Any:
    """bm25s pulls in scipy: imported on first use, so opening a store stays fast."""
    import bm25s

    return bm25s


def tokenize(texts: list[str]) -> list[list[str]]:
    """Lower-case, drop English stop words, stem."""
    global _STEMMER
    if _STEMMER is None:
        import Stemmer

        _STEMMER = Stemmer.Stemmer("english")
    tokens: list[list[str]] = _bm25s().tokenize(
        texts, stopwords="en", stemmer=_STEMMER, return_ids=False, show_progress=False
    )
    return tokens


class SparseIndex:
    """BM25 keyed by unit row id; rebuilt lazily after changes."""

    def __init__(self, source: TextSource) -> None:
        self._source = source
        self._ids: list[int] = []
        self._pos: dict[int, int] = {}
        self._bm25: Any = None
        self._stale = True
        self._lock = threading.RLock()

    @property
    def stale(self) -> bool:
        return self._stale

    def __len__(self) -> int:
        with self._lock:
            self._ensure()
            return len(self._ids)

    def invalidate(self) -> None:
        """Mark the index out of date (after any add or delete)."""
        with self._lock:
            self._stale = True

    def _ensure(self) -> None:
        if not self._stale:
            return
        ids: list[int] = []
        texts: list[str] = []
        for rid, text in self._source():
            ids.append(rid)
            texts.append(text)
        self._ids = ids
        self._pos = {rid: i for i, rid in enumerate(ids)}
        self._bm25 = None
        if ids:
            bm25 = _bm25s().BM25()
            bm25.index(tokenize(texts), show_progress=False)
            self._bm25 = bm25
        self._stale = False

    def search(self, query: str, k: int, allowed: Iterable[int] | None = None) -> list[tuple[int, float]]:
        """Top ``k`` (id, BM25 score) with a positive score, best first."""
        with self._lock:
            self._ensure()
            if self._bm25 is None or k <= 0:
                return []
            terms = tokenize([query])[0]
            if not terms:
                return []
            scores = np.asarray(self._bm25.get_scores(terms), dtype=np.float32)
            if allowed is not None:
                mask = np.zeros(len(self._ids), dtype=bool)
                mask[[self._pos[r] for r in allowed if r in self._pos]] = True
                scores = np.where(mask, scores, np.float32(0.0))
            ids = self._ids
        k = min(k, len(scores))
        top = np.argpartition(-scores, k - 1)[:k]
        ranked = sorted(top.tolist(), key=lambda i: (-scores[i], ids[i]))
        return [(ids[i], float(scores[i])) for i in ranked if scores[i] > 0]

    def save(self, folder: Path) -> bool:
        """Persist the built index; returns False when there is nothing current to save."""
        with self._lock:
            if self._stale or self._bm25 is None:
                return False
            tmp = folder / f".bm25.{os.getpid()}.{threading.get_ident()}.tmp"
            shutil.rmtree(tmp, ignore_errors=True)
            self._bm25.save(str(tmp))
            (tmp / "omnimem_ids.json").write_text(json.dumps(self._ids), encoding="utf-8")
            final = folder / "bm25"
            shutil.rmtree(final, ignore_errors=True)  # a folder cannot be replaced atomically: the
            tmp.replace(final)  # caller holds the index lock and writes state.json last
            return True

    @classmethod
    def load(cls, folder: Path, source: TextSource) -> SparseIndex:
        """Load a saved index; the caller checks it is current."""
        index = cls(source)
        final = folder / "bm25"
        index._bm25 = _bm25s().BM25.load(str(final))
        index._ids = json.loads((final / "omnimem_ids.json").read_text(encoding="utf-8"))
        index._pos = {rid: i for i, rid in enumerate(index._ids)}
        index._stale = False
        return index
