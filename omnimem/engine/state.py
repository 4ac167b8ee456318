"""What changes after an engine opens, and the locks that guard it: :class:`WriterState`, the writer's.

The writer (:mod:`omnimem.engine.writer`) owns it: it takes the locks, sets
``closed`` and swaps the embedder and the search (``reembed``, holding both
locks). The retriever takes ``lock`` for its short catch-up with other
processes (tested); the other rooms only hold the engine open for a read
(:meth:`WriterState.reading`) and read the embedder and the search. What never
changes is in :class:`omnimem.engine.deps.Deps`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from omnimem.embed.base import Embedder
from omnimem.errors import ReadOnlyStoreError, StoreError
from omnimem.store.base import CandidateSearch


@dataclass(eq=False)
class WriterState:
    """The locks, whether the engine is open, the reads in flight, and the embedder and search ``reembed`` swaps."""

    embedder: Embedder  # swapped by the writer's reembed, under both locks
    search: CandidateSearch  # dense, text and image candidates, filtered inside the backend; swapped with it
    read_only: bool  # the store's (fixed when it opens): ``check_open(write=True)`` refuses writes
    path: Path | None  # where the store is, for that error's message
    # the locks are taken only by the writer (omnimem.engine.writer) and the retriever's catch-up (tested)
    lock: threading.RLock = field(default_factory=threading.RLock)  # store and index access (short)
    write_lock: threading.RLock = field(default_factory=threading.RLock)  # one writer; readers not blocked
    closed: bool = False
    wake: Callable[[], None] = lambda: None  # tells the enrichment workers that jobs were enqueued (set once)
    _reads: int = 0  # reads in flight: searches and the rest (they run without the engine lock)
    _reads_done: threading.Condition = field(default_factory=threading.Condition)
    _searches: int = 0  # of which searches
    _search_began: float = float("-inf")  # time.monotonic() when the latest search began

    @contextmanager
    def reading(self, search: bool = False) -> Iterator[None]:
        """Hold the engine open for a read that runs outside ``lock``: ``close`` waits for it to end.

        ``search``: the read is a search (what :meth:`searches_recent` watches for)."""
        with self._reads_done:
            if self.closed:
                raise StoreError("this Memory is closed")
            self._reads += 1
            if search:
                self._searches += 1
                self._search_began = time.monotonic()
        try:
            yield
        finally:
            with self._reads_done:
                self._reads -= 1
                if search:
                    self._searches -= 1
                self._reads_done.notify_all()

    def yield_to_reads(self, within: float) -> None:
        """Let the searches in flight end first, waiting ``within`` seconds at most: a write about to spend the
        cores on its embedding call gives them to the reads running now (a search is a few ms of CPU; the
        embedding of a group of adds tens), so a storm of writes delays a search by little more than the
        write lock's short hold. Bounded, so searches that never stop only slow writes, never stop them."""
        if within <= 0:
            return
        with self._reads_done:
            self._reads_done.wait_for(lambda: self._reads == 0, within)

    def searches_recent(self, within: float) -> bool:
        """Whether a search is in flight or began in the last ``within`` seconds (searches are coming in)."""
        with self._reads_done:
            return self._searches > 0 or time.monotonic() - self._search_began < within

    def wait_for_reads(self) -> None:
        """Block until every search that began before ``closed`` was set has ended."""
        with self._reads_done:
            while self._reads:
                self._reads_done.wait()

    def check_open(self, *, write: bool = False) -> None:
        """Raise if the engine is closed, or (``write``) if its store is read-only."""
        if self.closed:
            raise StoreError("this Memory is closed")
        if write and self.read_only:
            raise ReadOnlyStoreError(f"store {self.path} is open read-only; open it writable to change it")
