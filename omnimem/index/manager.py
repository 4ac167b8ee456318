"""Keeps the dense and sparse indexes in step with the hot tier, without rebuilding them.

The store's change counter (``seq``) says whether anything changed; the row
ids say what. Row ids only grow and are never reused, so the difference
between the ids the indexes hold and the ids in the store is exactly the
units added (fetched and indexed) and removed (dropped at once) since. That
covers this process's writes (told directly by ``added``/``removed``),
another process's writes (``sync`` at the next search) and index files saved
at an older counter (loaded, then caught up). Only a change of embedder,
dimension, ``sparse_context`` or file format, or unreadable files, rebuild.

With ``sparse_context`` each unit's BM25 text ends the texts of the text
units before it in its scope, so removing a text unit changes the texts of
the units after it: the sparse index tags each document with its scope and
the manager re-indexes those followers from the store at once (the removed
unit's words never stay findable through a neighbour).

Searches take no lock here: the dense and sparse indexes each let searches
run together and make a change exclusive only for its final swap. ``_lock``
orders the changes (writers, catch-ups, saves) among themselves.
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

import numpy as np

from omnimem.embed.base import Vectors
from omnimem.errors import StoreError
from omnimem.index.dense import DenseIndex, Ids
from omnimem.index.sparse import SparseIndex
from omnimem.text import EmbedInput, embed_texts
from omnimem.mau import MAU, Modality, Scope, search_text
from omnimem.store.sqlite.store import SQLiteStore

log = logging.getLogger(__name__)
_FETCH = 2_000  # rows per fetch while catching up


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
        meta = store.meta()
        self.language = meta.language if meta else "en"  # the store's BM25 language (its meta records it)
        self.sparse = SparseIndex(language=self.language)
        self._scopes: list[Scope | None] = []  # group -> scope (None: forgotten); a BM25 tag is group * 2 + is_text
        self._group: dict[Scope, int] = {}
        self._embedder = meta.embedder if meta else None
        self.seen_seq = -1
        self.rebuilds = 0  # full rebuilds from the hot tier
        self.catchups = 0  # incremental catch-ups with writes seen through the counter
        self._trainer: threading.Thread | None = None
        self._load_or_rebuild()

    # -- documents ----------------------------------------------------------------
    def _tag(self, scope: Scope, modality: Modality | str) -> int:
        group = self._group.get(scope)
        if group is None:
            group = self._group[scope] = len(self._scopes)
            self._scopes.append(scope)
        return group * 2 + (1 if Modality(modality) is Modality.TEXT else 0)

    def _documents(self, rows: Sequence[tuple[int, MAU]]) -> tuple[list[int], list[str], list[int]]:
        """Row ids, BM25 texts and tags of units given in row-id order; context read from the store."""
        history: dict[Scope, list[str]] = {}
        if self.sparse_context:
            first: dict[Scope, int] = {}
            for rid, unit in rows:
                first.setdefault(unit.scope, rid)
            for scope, rid in first.items():
                history[scope] = [search_text(sp, su) for sp, su in
                                  self.store.lines_before(scope, rid, self.sparse_context)]
        inputs = [EmbedInput(u.scope, u.speaker, u.summary, u.modality) for _, u in rows]
        texts = embed_texts(inputs, context=self.sparse_context, history=history)
        return [rid for rid, _ in rows], texts, [self._tag(u.scope, u.modality) for _, u in rows]

    def _all_documents(self) -> tuple[list[int], list[str], list[int]]:
        rows = list(self.store.embed_rows())
        inputs = [EmbedInput(scope, speaker, summary, Modality(modality))
                  for _, scope, speaker, summary, modality, _ in rows]
        texts = embed_texts(inputs, context=self.sparse_context)
        return ([row[0] for row in rows], texts, [self._tag(row[1], row[4]) for row in rows])

    # -- opening ------------------------------------------------------------------
    def _load_or_rebuild(self) -> None:
        if self.folder is not None and self._try_load():
            self.sync()  # files saved at an older counter: caught up, not rebuilt
            return
        self.rebuild()

    def _try_load(self) -> bool:
        assert self.folder is not None
        if not self.folder.exists():
            return False
        if not self.writable:  # no lock file can be made; a torn read fails to load and is rebuilt in memory
            return self._load_files()
        with _file_lock(self.folder / ".lock"):
            _sweep_partial_saves(self.folder)
            return self._load_files()

    def _load_files(self) -> bool:
        assert self.folder is not None
        state_file = self.folder / "state.json"
        try:
            state = json.loads(state_file.read_text(encoding="utf-8"))
            if (state.get("dim") != self.dim or state.get("sparse_context", 0) != self.sparse_context
                    or state.get("embedder") != self._embedder or not isinstance(state.get("seq"), int)):
                log.info("index files on disk were made differently: rebuilding")
                return False
            dense = DenseIndex.load(self.folder / "dense.faiss", self.dim)
            sparse = SparseIndex.load(self.folder, language=self.language)
            scopes = [None if s is None else Scope(*s)
                      for s in json.loads((self.folder / "scopes.json").read_text(encoding="utf-8"))]
        except (OSError, ValueError, RuntimeError, KeyError, TypeError) as exc:
            log.info("indexes on disk unusable (%s): rebuilding", exc)
            return False
        if len(dense) != len(sparse):
            log.info("index files on disk disagree (%s dense, %s sparse): rebuilding", len(dense), len(sparse))
            return False
        self.dense, self.sparse = dense, sparse
        self._scopes, self._group = scopes, {s: i for i, s in enumerate(scopes) if s is not None}
        self.seen_seq = state["seq"]
        return True

    # -- keeping in step ------------------------------------------------------------
    def rebuild(self) -> None:
        """Rebuild both indexes from the hot tier (no re-embedding needed)."""
        with self._lock:
            seq = self.store.seq()
            meta = self.store.meta()
            dense = DenseIndex(self.dim)
            for ids, vecs in self.store.vectors():
                dense.add(ids.tolist(), vecs)
            dense.optimize()
            self._scopes, self._group = [], {}
            sparse = SparseIndex(language=self.language)
            sparse.reset(*self._all_documents())
            self.dense, self.sparse = dense, sparse
            self._embedder = meta.embedder if meta else None
            self.seen_seq = seq
            self.rebuilds += 1

    def sync(self) -> None:
        """Catch up with writes made by another process (or files saved earlier), if any."""
        if self.store.seq() != self.seen_seq:
            self.catch_up()

    def catch_up(self) -> None:
        """Index the units added and drop those removed since ``seen_seq``, found by row id."""
        with self._lock:
            seq = self.store.seq()
            if seq == self.seen_seq:
                return
            meta = self.store.meta()
            if meta is not None and (meta.embedder != self._embedder or meta.dim != self.dim):
                self.rebuild()  # every vector was rewritten
                return
            stored = self.store.all_rids()
            held = self.sparse.rids()
            gone = np.setdiff1d(held, stored, assume_unique=True)
            new = np.setdiff1d(stored, held, assume_unique=True)
            if len(gone):
                self._remove(gone.tolist())
            for start in range(0, len(new), _FETCH):
                rows = self.store.get_rows(new[start:start + _FETCH].tolist())
                self._add(sorted(rows.items()))
            self.seen_seq = seq
            self.catchups += 1
        self._train_behind()

    def added(self, rows: Sequence[tuple[int, MAU]], vectors: Vectors, write_seq: int, writes: int = 1) -> None:
        """This process stored ``rows`` (their vectors given) in ``writes`` writes, the last producing counter
        ``write_seq`` (a group of adds is indexed at once: :mod:`omnimem.engine.writer.group`)."""
        with self._lock:
            if write_seq <= self.seen_seq:  # a catch-up already indexed them
                return
            if write_seq - writes != self.seen_seq:  # someone else wrote in between
                self.catch_up()
                return
            self.dense.add([rid for rid, _ in rows], vectors)
            self.sparse.add(*self._documents(sorted(rows, key=lambda r: r[0])))
            self.seen_seq = write_seq
        self._train_behind()

    def _train_behind(self) -> None:
        """Switch the dense index to IVF (or retrain it) in a background thread when its size calls for it.

        Training a large index takes seconds to a minute; searches meanwhile use
        the current index (exact below the threshold), and the swap is instant.
        Never in a search, and never while a writer holds the engine's lock.
        """
        dense = self.dense
        if not dense.needs_training or (self._trainer is not None and self._trainer.is_alive()):
            return
        self._trainer = threading.Thread(target=dense.optimize, daemon=True, name="omnimem-ivf-train")
        self._trainer.start()

    def settle(self) -> None:
        """Wait for background IVF training and BM25 merges (tests, benchmarks)."""
        trainer = self._trainer
        if trainer is not None:
            trainer.join()
        self.sparse.settle()

    def removed(self, rids: Iterable[int], write_seq: int) -> None:
        """This process removed ``rids``, producing counter ``write_seq``."""
        with self._lock:
            if write_seq <= self.seen_seq:
                return
            if write_seq - 1 != self.seen_seq:
                self.catch_up()
                return
            self._remove(list(rids))
            self.seen_seq = write_seq

    def _add(self, rows: Sequence[tuple[int, MAU]]) -> None:
        vectors = [(rid, u.embedding) for rid, u in rows if u.embedding is not None]
        if vectors:
            self.dense.add([rid for rid, _ in vectors], np.vstack([v for _, v in vectors]))
        self.sparse.add(*self._documents(rows))

    def _remove(self, rids: list[int]) -> None:
        self.dense.remove(rids)
        gone = self.sparse.remove(rids)
        if self.sparse_context:
            self._retext([(rid, tag) for rid, tag in gone if tag & 1])

    def _retext(self, gone: list[tuple[int, int]]) -> None:
        """Re-index the units whose context held a removed text unit (the next ones in its scope)."""
        if not gone:
            return
        removed: dict[int, list[int]] = {}  # scope group -> removed row ids
        for rid, tag in gone:
            removed.setdefault(tag // 2, []).append(rid)
        live = self.sparse.with_tags([group * 2 + t for group in removed for t in (0, 1)])  # by row id
        todo: list[int] = []
        for group, rids in removed.items():
            low, high = min(rids), max(rids)
            texts_between = 0  # text units after the last removed one, before the current unit
            for rid, tag in live:
                if tag // 2 != group or rid < low:
                    continue
                if rid > high:
                    if texts_between >= self.sparse_context:
                        break  # this unit's context no longer reaches a removed one, nor do later ones
                    texts_between += tag & 1
                todo.append(rid)
        if todo:
            rows = self.store.get_rows(todo)
            self.sparse.add(*self._documents(sorted(rows.items())))

    # -- searching ------------------------------------------------------------------
    def search_dense(self, query: Vectors, k: int, allowed: Ids | None) -> list[tuple[int, float]]:
        return self.dense.search(query, k, allowed)

    def search_sparse(self, query: str, k: int, allowed: Ids | None) -> list[tuple[int, float]]:
        return self.sparse.search(query, k, allowed)

    # -- saving ---------------------------------------------------------------------
    def save(self) -> None:
        """Write the indexes and the counter they reflect, under a lock shared by processes.

        If another process wrote since these indexes were caught up they are
        stale: the files are removed instead (the next open rebuilds), so a
        forgotten unit's vector or words never stay behind on disk. Saving
        compacts the BM25 segments, so no removed document's postings or
        words are written.
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
            _sweep_partial_saves(folder)
            state = folder / "state.json"
            state.unlink(missing_ok=True)  # until all files are written, none of them is trusted
            if self.store.seq() != self.seen_seq:
                (folder / "dense.faiss").unlink(missing_ok=True)
                shutil.rmtree(folder / "bm25", ignore_errors=True)
                return
            self.dense.save(folder / "dense.faiss")
            self.sparse.save(folder)
            live = {tag // 2 for _, tag in self.sparse.with_tags(range(2 * len(self._scopes)))}
            scopes = [[s.user_id, s.agent_id, s.session_id] if s is not None and i in live else None
                      for i, s in enumerate(self._scopes)]  # a forgotten scope's ids are not written
            _write(folder / "scopes.json", json.dumps(scopes))
            _write(state, json.dumps({"seq": self.seen_seq, "dim": self.dim, "sparse_context": self.sparse_context,
                                      "embedder": self._embedder}))

    def sizes(self) -> dict[str, int]:
        return {"dense": len(self.dense), "sparse": len(self.sparse)}


def _sweep_partial_saves(folder: Path) -> None:
    """Remove what a save killed midway left: its ``.*.tmp`` files and folders (words, vectors, scopes).

    Every save writes its temporary files while holding the folder's lock, so whoever holds it sees
    only those of saves that died. They may hold a forgotten unit's words, so they must not outlive
    the next open or save of the store.
    """
    for leftover in folder.glob(".*.tmp"):
        if leftover.is_dir() and not leftover.is_symlink():
            shutil.rmtree(leftover, ignore_errors=True)
        else:
            leftover.unlink(missing_ok=True)


def _write(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)


@contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    """An exclusive lock between processes saving or loading the same index files."""
    with open(path, "a+b") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
