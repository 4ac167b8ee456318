"""A readers-writer lock: searches share the indexes, a change takes them alone.

FAISS and numpy release the GIL while they scan, so two searches in two
threads really run at once, but only if no single lock serialises them.
Readers hold :meth:`RWLock.read` together; a writer waits for them to
leave and holds :meth:`RWLock.write` alone (a writer waiting blocks new
readers, so a stream of searches cannot starve a delete). Writers are
short: an index change does its slow work (embedding, training, building a
merged segment) before it takes the lock, and only swaps or flips bits
under it.

The write side is re-entrant for its owner, and the owner may also take
the read side (a writer that searches, e.g. catching up then searching).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager


class RWLock:
    """Many readers or one (re-entrant) writer."""

    def __init__(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._readers = 0
        self._writer: int | None = None  # thread id of the writer holding the lock
        self._depth = 0  # the writer's re-entry count
        self._waiting = 0  # writers waiting: new readers queue behind them

    @contextmanager
    def read(self) -> Iterator[None]:
        me = threading.get_ident()
        with self._cond:
            if self._writer == me:  # the writer reads its own state
                self._depth += 1
                owner = True
            else:
                owner = False
                while self._writer is not None or self._waiting:
                    self._cond.wait()
                self._readers += 1
        try:
            yield
        finally:
            with self._cond:
                if owner:
                    self._depth -= 1
                else:
                    self._readers -= 1
                    if self._readers == 0:
                        self._cond.notify_all()

    @contextmanager
    def write(self) -> Iterator[None]:
        me = threading.get_ident()
        with self._cond:
            if self._writer == me:
                self._depth += 1
            else:
                self._waiting += 1
                try:
                    while self._writer is not None or self._readers:
                        self._cond.wait()
                finally:
                    self._waiting -= 1
                self._writer = me
                self._depth = 1
        try:
            yield
        finally:
            with self._cond:
                self._depth -= 1
                if self._depth == 0:
                    self._writer = None
                    self._cond.notify_all()
