"""The group commit of the engine's writer: adds that arrive together are embedded once and written as one group.

A leader-follower group commit. Every add (``Memory.add``, ``add_dialogue``,
an HTTP request, an MCP call, a thread of this process) queues a request and
waits. A waiter that finds no leader becomes the leader: it takes the engine's
write lock, then everything queued by then (up to ``max_items`` items), and

1. decides each item's fate in arrival order exactly as one call after the
   other would: duplicates, tombstones and the novelty filter see what the
   earlier requests of the group are about to store (two identical texts in
   one group: the first is stored, the second is its duplicate);
2. embeds every accepted item of the group in one call to the model;
3. writes each request's units in that request's own transaction (its own
   audit event, jobs and supersessions, atomic alone as before), then indexes
   the whole group in one update and adds the group's counters in one write,
   so each unit is searchable when its add returns;
4. wakes the followers, each with exactly its own results or its own error.

Before it takes the group, a new leader gathers briefly: it yields once, and
if adds arrived meanwhile it waits while they keep arriving (each within
``gather_s`` of the one before, ``GATHER_MAX_S`` at most), so a burst
released at once forms one group rather than its first add alone and the
rest behind it. A lone add sees no arrival after the yield and waits no more. Requests that queue while a group is being
written form the next group, so a burst of N adds costs about one embedding
call and one index update, not N.

Why a transaction per request and not one per group: an add stays atomic on
its own and one request's failure cannot undo another's; SQLite commits in
WAL mode without an fsync (``synchronous=NORMAL``), so these commits are cheap
next to the embedding call; what grew with the group was indexing each
request apart (a BM25 segment and a dense add each), now done once.

Failures stay with their request. If the shared step (look-ups, decisions,
summaries, embedding) fails, each request of the group is run alone. If one
request's transaction fails, it gets that error and the requests after it are
decided again alone, so none rests on a unit that was never stored (say, as a
"duplicate of" it).

Not queued (written at once by :meth:`Writer.ingest` in the caller's thread):
calls with a progress callback, media chains (``keep_chain`` or chained
items) and calls of more than ``max_items`` items. Such a large call gives
way to the queue between its batches (:meth:`GroupCommit.give_way`), so
another user's add waits for one short step of it, not for all of it. Never
add while holding the write lock: the leader may be waiting for it.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass

from typing import Protocol

from omnimem.engine.state import WriterState
from omnimem.contract.caller import acting_as, current_actor
from omnimem.errors import StoreError
from omnimem.engine.ingest.pipeline import Built, Ingestor
from omnimem.results import AddResult
from omnimem.engine.ingest.prepare import Pending
from omnimem.engine.writer.written import Call, Decided, Written
from omnimem.mau import Scope


class Writer(Protocol):
    """The doors of :class:`omnimem.engine.writer.core.Writer` a group is written through."""

    state: WriterState
    ingestor: Ingestor

    def ingest(self, items: Sequence[Pending], *, allow_forgotten: bool, action: str,
               reason: str | None) -> list[AddResult]: ...

    def decide(self, ingestor: Ingestor, calls: Sequence[Call], recent: dict[Scope, list[tuple[str, str]]],
               seen: dict[str, str]) -> list[Decided]: ...

    def build(self, ingestor: Ingestor, plans: Sequence[Decided]) -> Built | None: ...

    def write(self, ingestor: Ingestor, plans: Sequence[Decided],
              built: Built | None) -> tuple[list[Written], tuple[int, Exception] | None]: ...

    def sync(self) -> None: ...


BUSY_S = 1.0  # an add arrived this recently: a large call writes in small steps (``Writer._ingest_in_steps``)
NEXT_S = 0.003  # a large call giving way waits this long for the next add of a client adding one after another
GATHER_S = 0.003  # a new leader waits this long for one more add of a burst (again after each arrival)
GATHER_MAX_S = 0.025  # and no longer than this in all
# A burst of HTTP adds reaches the queue 0.1-2.2 ms apart (the server's event loop reads them one by one), over
# ~12 ms for 24: at 1 ms / 5 ms most bursts were written as two groups, two embedding calls; at 3 ms / 25 ms as
# one (benchmarks/results/archive/final/burst-gather-ab.json: burst p95 over the model's own call 1.60x against 1.82x)


@dataclass(eq=False)
class _Request:
    """One add call waiting in the queue, and what became of it."""

    call: Call  # with the caller's ``acting_as``: the leader writes the audit event in its name
    results: list[AddResult] | None = None
    error: BaseException | None = None
    done: bool = False


class GroupCommit:
    """Queues a writer's adds and writes them in groups (see the module docstring)."""

    def __init__(self, writer: Writer, max_items: int, gather_s: float = GATHER_S) -> None:
        self.writer = writer
        self.state = writer.state
        self.max_items = max_items
        self.gather_s = gather_s
        lock = threading.Lock()
        self._cond = threading.Condition(lock)  # a group was written, or the leader stepped down
        self._arrived = threading.Condition(lock)  # a request was queued (only :meth:`wait_queued` waits on it)
        self._queue: deque[_Request] = deque()
        self._leading = False
        self._counts = {"adds": 0, "groups": 0, "largest_group": 0}
        self._last_arrival = -BUSY_S

    def add(self, items: Sequence[Pending], allow_forgotten: bool, action: str, reason: str | None) -> list[AddResult]:
        """Queue the call and wait for its group to be written (leading it if no one is); its own results."""
        request = _Request(Call(items, allow_forgotten, action, reason, current_actor()))
        with self._cond:
            self._queue.append(request)
            self._last_arrival = time.monotonic()
            self._arrived.notify_all()
            while self._leading and not request.done:
                self._cond.wait()
            lead = not request.done
            if lead:
                self._leading = True
        if lead:
            try:
                self._gather()
                while not request.done:  # our own request is in the next group unless the queue is long
                    self._lead()
            finally:
                with self._cond:
                    self._leading = False
                    self._cond.notify_all()  # a waiting follower takes over the rest of the queue
        if request.error is not None:
            raise request.error
        assert request.results is not None
        return request.results

    def stats(self) -> dict[str, int]:
        with self._cond:
            return dict(self._counts)

    def wait_queued(self, count: int, timeout: float) -> bool:
        with self._arrived:
            return self._arrived.wait_for(lambda: len(self._queue) >= count, timeout)

    # -- a large call's steps give way to queued adds (``Writer._ingest_in_steps``) -----------------------------
    def busy(self) -> bool:
        """Whether an add arrived within the last ``BUSY_S`` seconds."""
        with self._cond:
            return time.monotonic() - self._last_arrival < BUSY_S

    def give_way(self, share: float) -> None:
        """Let the adds queued now be written first, and the adds that follow them closely, for up to ``share``
        seconds in all (call it without the write lock).

        A client that adds one thing after another sends its next add just after the last returned, so after
        the queue is written this waits ``NEXT_S`` for one more; ``share`` (the large call's last step) bounds
        it, so the large call keeps at least about half of the writer's time and is never stopped.
        """
        deadline = time.monotonic() + share
        with self._cond:
            while True:
                waiting = list(self._queue)
                if waiting:
                    self._cond.wait_for(lambda: all(r.done for r in waiting), max(0.0, deadline - time.monotonic()))
                elif time.monotonic() - self._last_arrival >= BUSY_S:  # no one else is adding: go on at once
                    return
                seen = self._last_arrival
                left = deadline - time.monotonic()
                if left <= 0 or not self._arrived.wait_for(lambda: self._last_arrival != seen, min(NEXT_S, left)):
                    return

    # -- the leader ---------------------------------------------------------------------------------------------
    def _gather(self) -> None:
        """Let a burst reach the queue: after a yield, while adds keep arriving, wait for each next one up to
        ``gather_s`` (``GATHER_MAX_S`` in all). A lone add finds no arrival after the yield and waits no more."""
        if self.gather_s <= 0:
            return
        with self._arrived:
            seen = len(self._queue)
        time.sleep(0)  # threads released with ours (a barrier, a burst of requests) run and queue now
        deadline = time.monotonic() + GATHER_MAX_S
        with self._arrived:
            while seen < len(self._queue) < self.max_items:
                seen = len(self._queue)
                wait = min(self.gather_s, deadline - time.monotonic())
                if wait <= 0 or not self._arrived.wait_for(lambda: len(self._queue) > seen, wait):
                    return

    def _lead(self) -> None:
        with self.state.write_lock:
            with self._cond:
                group: list[_Request] = []
                size = 0
                while self._queue and (not group or size + len(self._queue[0].call.items) <= self.max_items):
                    group.append(self._queue.popleft())
                    size += len(group[-1].call.items)
                self._counts["adds"] += len(group)
                self._counts["groups"] += 1
                self._counts["largest_group"] = max(self._counts["largest_group"], len(group))
            try:
                self._write(group)
            except BaseException as exc:  # e.g. KeyboardInterrupt in the leader: no follower may wait for ever
                for request in group:
                    if request.results is None and request.error is None:
                        request.error = exc
                raise
            finally:
                with self._cond:
                    for request in group:
                        if request.results is None and request.error is None:
                            request.error = StoreError("the add was not written: the engine's writer stopped")
                        request.done = True
                    self._cond.notify_all()

    def _write(self, group: list[_Request]) -> None:
        """The write sequence once for the whole group: its decisions in arrival order, one build (one embedding
        call), each request's own transaction, one index update and one counter update for them all."""
        if len(group) == 1:
            self._alone(group[0])
            return
        writer = self.writer
        try:
            self.state.check_open(write=True)
            writer.sync()
            plans = writer.decide(writer.ingestor, [request.call for request in group], {}, {})
            writer.ingestor.reset_chain()
            built = writer.build(writer.ingestor, plans)
        except Exception:  # which request caused it is unknown: each runs alone and meets its own
            for request in group:
                self._alone(request)
            return
        written, failure = writer.write(writer.ingestor, plans, built)
        stop = len(group) if failure is None else failure[0]
        for request, plan in zip(group[:stop], plans):
            request.results = [r for r in plan.results if r is not None]
        if failure is not None:
            group[stop].error = failure[1]
            for later in group[stop + 1:]:  # decided against units that were not stored: decide them again
                self._alone(later)

    def _alone(self, request: _Request) -> None:
        """Write one request as its own call would (its results, or its error)."""
        try:
            with acting_as(request.call.actor):
                request.results = self.writer.ingest(request.call.items, allow_forgotten=request.call.allow_forgotten,
                                                       action=request.call.action, reason=request.call.reason)
        except Exception as exc:  # handed to the request's caller, raised in its thread
            request.error = exc
