"""Keeps the dense and sparse indexes in step with the hot tier.

The store's change counter (``seq``) is the truth: indexes saved on disk carry
the counter they reflect and are rebuilt from the hot tier when it differs,
which covers crashes, missing files and writes by another process.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import shutil
import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from omnimem.embed.base import Vectors
from omnimem.errors import StoreError
from omnimem.index.dense import DenseIndex, Ids
from omnimem.index.sparse import SparseIndex
from omnimem.ingest.embedding import EmbedInput, embed_texts
from omnimem.mau import MAU, Modality, search_text
from omnimem.store.sqlite import SQLiteStore

log = logging.getLogger(__name__)


class IndexSet:
    """Dense + sparse indexes of one store, persisted under ``folder``."""

    def __init__(self, store: SQLiteStore, dim: int, folder: Path | None, *, sparse_context: int = 0,
                 writable: bool = True) -> None:
        self.store = store
        self.dim = dim
        self.folder = folder
        self.sparse_context = sparse_context  # BM25 also indexes the words of this many units before each
        self.writable = writable  # a read-only store loads its index files (or rebuilds in memory), never saves
        self._lock = threading.RLock()
        self.dense = DenseIndex(dim)
        self.sparse = SparseIndex(self._texts)
        self.seen_seq = -1
        self.rebuilds = 0
        self._load_or_rebuild()

    def _texts(self) -> Iterator[tuple[int, str]]:
        if not self.sparse_context:
            for rid, speaker, summary in self.store.index_rows():
                yield rid, search_text(speaker, summary)
            return
        rows = list(self.store.embed_rows())
        inputs = [EmbedInput(scope, speaker, summary, Modality(modality)) for _, scope, speaker, summary, modality, _
                  in rows]
        yield from zip((row[0] for row in rows), embed_texts(inputs, context=self.sparse_context))

    def _load_or_rebuild(self) -> None:
        seq = self.store.seq()
        if self.folder is not None and self._try_load(seq):
            self.seen_seq = seq
            return
        self.rebuild()

    def _try_load(self, seq: int) -> bool:
        assert self.folder is not None
        if not self.folder.exists():
            return False
        if not self.writable:  # no lock file can be made; a torn read fails to load and is rebuilt in memory
            return self._load_files(seq)
        with _file_lock(self.folder / ".lock"):
            return self._load_files(seq)

    def _load_files(self, seq: int) -> bool:
        assert self.folder is not None
        state_file = self.folder / "state.json"
        try:
            state = json.loads(state_file.read_text(encoding="utf-8"))
            if (state.get("seq") != seq or state.get("dim") != self.dim
                    or state.get("sparse_context", 0) != self.sparse_context):
                log.info("indexes on disk are stale (seq %s, store %s): rebuilding", state.get("seq"), seq)
                return False
            self.dense = DenseIndex.load(self.folder / "dense.faiss", self.dim)
            if (self.folder / "bm25").exists():
                self.sparse = SparseIndex.load(self.folder, self._texts)
            return True
        except (OSError, ValueError, RuntimeError, KeyError) as exc:
            log.info("indexes on disk unusable (%s): rebuilding", exc)
            return False

    def rebuild(self) -> None:
        """Rebuild both indexes from the hot tier (no re-embedding needed)."""
        with self._lock:
            seq = self.store.seq()
            dense = DenseIndex(self.dim)
            for ids, vecs in self.store.vectors():
                dense.add(ids.tolist(), vecs)
            self.dense = dense
            self.sparse = SparseIndex(self._texts)
            self.seen_seq = seq
            self.rebuilds += 1

    def sync(self) -> None:
        """Catch up with writes made by another process, if any."""
        if self.store.seq() != self.seen_seq:
            self.rebuild()

    def added(self, rows: Sequence[tuple[int, MAU]], vectors: Vectors, write_seq: int) -> None:
        with self._lock:
            if write_seq - 1 != self.seen_seq:  # someone else wrote in between
                self.rebuild()
                return
            self.dense.add([rid for rid, _ in rows], vectors)
            self.sparse.invalidate()
            self.seen_seq = write_seq

    def removed(self, rids: Iterable[int], write_seq: int) -> None:
        with self._lock:
            if write_seq - 1 != self.seen_seq:
                self.rebuild()
                return
            self.dense.remove(rids)
            self.sparse.invalidate()
            self.seen_seq = write_seq

    def search_dense(self, query: Vectors, k: int, allowed: Ids | None) -> list[tuple[int, float]]:
        return self.dense.search(query, k, allowed)

    def search_sparse(self, query: str, k: int, allowed: Ids | None) -> list[tuple[int, float]]:
        return self.sparse.search(query, k, None if allowed is None else allowed.tolist())

    def save(self) -> None:
        """Write the indexes and the counter they reflect, under a lock shared by processes.

        If another process wrote since these indexes were built they are
        stale: the files are removed instead (the next open rebuilds), so a
        forgotten unit's vector or words never stay behind on disk.
        """
        if self.folder is None or not self.writable:
            return
        try:
            self._save(self.folder)
        except OSError as exc:  # the hot tier is the truth: stale or missing files are rebuilt at the next open
            raise StoreError(f"cannot write the index files in {self.folder}: {exc.strerror or exc}") from None

    def _save(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        with self._lock, _file_lock(folder / ".lock"):
            state = folder / "state.json"
            state.unlink(missing_ok=True)  # until all files are written, none of them is trusted
            if self.store.seq() != self.seen_seq:
                (folder / "dense.faiss").unlink(missing_ok=True)
                shutil.rmtree(folder / "bm25", ignore_errors=True)
                return
            self.dense.save(folder / "dense.faiss")
            if not self.sparse.save(folder):
                # a stale BM25 is rebuilt on the next search; do not keep an old one
                shutil.rmtree(folder / "bm25", ignore_errors=True)
            tmp = folder / f".state.json.{os.getpid()}.{threading.get_ident()}.tmp"
            tmp.write_text(json.dumps({"seq": self.seen_seq, "dim": self.dim, "sparse_context": self.sparse_context}),
                           encoding="utf-8")
            tmp.replace(state)

    def sizes(self) -> dict[str, int]:
        return {"dense": len(self.dense), "sparse": len(self.sparse)}



@contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    """An exclusive lock between processes saving or loading the same index files."""
    with open(path, "a+b") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
