"""Queries first: the order in which a process's searches and writes use the model and the cores.

A slice of a write's texts is embedded on every core (torch's own threads), so a query embedded beside it only
makes each wait for the other while their thread pools spin against each other; under a mixed load on 2 cores
a search's query embedding then took most of its time (benchmarks/results/PERF.md, issue 51). A query is
embedded on one core (:func:`omnimem.embed.query.query_model`). The :class:`ModelGate` runs a write's slice
alone, and up to ``query_width`` queries (one per core) at once:

- a query takes the gate as soon as the call running ends: it never waits for a write's whole batch, only for
  the slice being embedded (:meth:`omnimem.embed.query.FastQueries.embed` cuts a write's texts into slices
  of :data:`SLICE` while queries are about);
- a write's slice waits while queries are waiting, and for ``quiet`` seconds after a query took the gate (the
  search then ranks and packs, a few milliseconds of CPU that a slice would halve), at most ``passage_wait``
  seconds; after that it goes next, before queries that come later, so a stream of searches slows writes
  but never stops them;
- queries are embedded one call each, side by side up to ``query_width``: a server runs at most its search
  slots' worth of searches at once (2 on 2 cores), so a batch of waiting queries would save little (one
  call's overhead), and one query's call is a few milliseconds.

Waits are bounded either way: a query waits for at most the call running and the writes past their bound (one
slice each), a slice for at most ``passage_wait`` and the call running.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

SLICE = 8  # while queries are about, a write's texts are embedded this many at a time
PASSAGE_WAIT_S = 0.05  # the longest a write's slice waits for queries before it goes next
QUIET_S = 0.015  # a slice also waits this long after a query took the gate (its search's ranking and packing)
QUERIES_ABOUT_S = 0.25  # queries are "about" when one is waiting or one took the gate this recently


class ModelGate:
    """A lock for model calls with two kinds of callers: queries first, then writes' slices (bounded waits)."""

    def __init__(self, passage_wait: float = PASSAGE_WAIT_S, quiet: float = QUIET_S,
                 clock: Callable[[], float] = time.monotonic, query_width: int | None = None) -> None:
        self.passage_wait = passage_wait
        self.quiet = quiet
        self.query_width = query_width or os.cpu_count() or 1
        self._clock = clock
        self._cond = threading.Condition()
        self._slice = False  # a write's slice holds the gate
        self._running = 0  # queries holding the gate
        self._queries = 0  # queries waiting for the gate
        self._passages = 0  # slices waiting for the gate
        self._overdue = 0  # of which waited past passage_wait: they go before any query that has not the gate yet
        self._last_query = float("-inf")
        self.served = {"queries": 0, "slices": 0, "slices_overdue": 0}

    @contextmanager
    def query(self) -> Iterator[None]:
        """Hold the gate for one query's model call: after the slice running and any overdue slice, before
        every other slice, beside at most ``query_width - 1`` other queries."""
        with self._cond:
            self._queries += 1
            self._last_query = self._clock()
            try:
                self._cond.wait_for(lambda: not self._slice and not self._overdue and self._running < self.query_width)
            finally:
                self._queries -= 1
            self._running += 1
            self.served["queries"] += 1
        try:
            yield
        finally:
            with self._cond:
                self._running -= 1
                self._cond.notify_all()

    @contextmanager
    def passage(self) -> Iterator[None]:
        """Hold the gate for one slice of stored texts: once no query waits and none took the gate in the last
        ``quiet`` seconds (its search is still ranking and packing: a slice now would take the cores from it),
        or ``passage_wait`` after the slice came."""
        with self._cond:
            deadline = self._clock() + self.passage_wait
            overdue = False
            self._passages += 1
            try:
                while self._slice or self._running or (not overdue and self._queries_first()):
                    now = self._clock()
                    if not overdue and now >= deadline:
                        overdue = True
                        self._overdue += 1
                        continue
                    if overdue or not self._queries_first():  # only the calls running to wait for: they notify
                        self._cond.wait()
                    else:  # until the deadline, or the end of the quiet time after the last query
                        wake = deadline if self._queries else min(deadline, self._last_query + self.quiet)
                        self._cond.wait(wake - now)
            finally:
                self._passages -= 1
                if overdue:
                    self._overdue -= 1
            self._slice = True
            self.served["slices"] += 1
            self.served["slices_overdue"] += overdue
        try:
            yield
        finally:
            with self._cond:
                self._slice = False
                self._cond.notify_all()

    def _queries_first(self) -> bool:
        return self._queries > 0 or self._clock() - self._last_query < self.quiet

    def queries_about(self, within: float = QUERIES_ABOUT_S) -> bool:
        """Whether a query is waiting or took the gate in the last ``within`` seconds."""
        with self._cond:
            return self._queries > 0 or self._clock() - self._last_query < within

    def waiting(self) -> tuple[int, int]:
        """How many queries and slices are waiting for the gate now (for stats and tests)."""
        with self._cond:
            return self._queries, self._passages


GATE = ModelGate()
"""The process's gate: the models are loaded once per process and shared by every ``Memory`` in it."""
