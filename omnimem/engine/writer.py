"""The engine's writer: adds that arrive together are embedded once and committed as one group.

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
   audit event, jobs and supersessions, atomic alone as before) and indexes
   them, so each unit is searchable when its add returns;
4. wakes the followers, each with exactly its own results or its own error.

Requests that queue while a group is being written form the next group, so a
burst of N adds costs about two embedding calls and lock waits, not N. A lone
add waits for nobody: there is no collection window to sit out.

Why a transaction per request and not one per group: an add stays atomic on
its own and one request's failure cannot undo another's; SQLite commits in
WAL mode without an fsync (``synchronous=NORMAL``), so these commits are cheap
next to the embedding calls and lock waits the group saves.

Failures stay with their request. If the shared step (look-ups, decisions,
summaries, embedding) fails, each request of the group is run alone. If one
request's transaction fails, it gets that error and the requests after it are
decided again alone, so none rests on a unit that was never stored (say, as a
"duplicate of" it).

Not queued (run in the caller's thread, under the write lock as before):
calls with a progress callback, media chains (``keep_chain`` or chained
items) and calls of more than ``max_items`` items. This writer is the start
of the single writer of the architecture's "one write path"; the other write
paths (delete, forget, import, enrichment) still take the write lock
themselves. Never call :meth:`Writer.add` while holding the write lock: the
leader may be waiting for it.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

from omnimem.engine.parts import Parts, acting_as, current_actor
from omnimem.errors import StoreError
from omnimem.engine.ingest.pipeline import BATCH, Built, Ingestor, Progress
from omnimem.engine.ingest.prepare import AddResult, Pending, check_storable
from omnimem.mau import Scope


@dataclass(eq=False)
class _Request:
    """One add call waiting in the queue, and what became of it."""

    items: Sequence[Pending]
    allow_forgotten: bool
    action: str
    reason: str | None
    actor: str | None  # the caller's ``acting_as``: the leader writes the audit event in its name
    results: list[AddResult] | None = None
    error: BaseException | None = None
    done: bool = False


@dataclass(eq=False)
class _Plan:
    """A request's decided items: its results so far, what it stores, and its counters."""

    results: list[AddResult | None]
    accepted: list[tuple[int, Pending, str]]
    counts: dict[str, float] = field(default_factory=dict)


class Writer:
    """Queues the engine's adds and writes them in groups (see the module docstring)."""

    def __init__(self, parts: Parts, ingestor: Ingestor, *, max_items: int = BATCH) -> None:
        self.parts = parts
        self.ingestor = ingestor
        self.max_items = max_items
        lock = threading.Lock()
        self._cond = threading.Condition(lock)  # a group was written, or the leader stepped down
        self._arrived = threading.Condition(lock)  # a request was queued (only :meth:`wait_queued` waits on it)
        self._queue: deque[_Request] = deque()
        self._leading = False
        self._counts = {"adds": 0, "groups": 0, "largest_group": 0}

    def add(
        self, items: Sequence[Pending], progress: Progress | None = None, *, keep_chain: bool = False,
        allow_forgotten: bool = False, action: str = "add", reason: str | None = None,
    ) -> list[AddResult]:
        """Store validated units like :meth:`Ingestor.ingest`; concurrent calls share one embedding and lock wait."""
        check_storable(items)  # the caller's own bad input raises here, before it queues
        if progress is not None or keep_chain or len(items) > self.max_items or any(i.chain for i in items):
            return self.ingestor.ingest(items, progress, keep_chain=keep_chain, allow_forgotten=allow_forgotten,
                                        action=action, reason=reason)
        request = _Request(items, allow_forgotten, action, reason, current_actor())
        with self._cond:
            self._queue.append(request)
            self._arrived.notify_all()
            while self._leading and not request.done:
                self._cond.wait()
            lead = not request.done
            if lead:
                self._leading = True
        if lead:
            try:
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
        """Adds that went through the queue, the groups they were written in, and the largest group."""
        with self._cond:
            return dict(self._counts)

    # -- test hooks: make a burst form one group deterministically -------------------------------------------
    @contextmanager
    def paused(self) -> Iterator[None]:
        """Within this block no group is written (the write lock is held): arriving adds queue up."""
        with self.parts.write_lock:
            yield

    def wait_queued(self, count: int, timeout: float) -> bool:
        """Block until ``count`` adds are queued (or ``timeout`` seconds pass); whether they are."""
        with self._arrived:
            return self._arrived.wait_for(lambda: len(self._queue) >= count, timeout)

    # -- the leader ---------------------------------------------------------------------------------------------
    def _lead(self) -> None:
        with self.parts.write_lock:
            with self._cond:
                group: list[_Request] = []
                size = 0
                while self._queue and (not group or size + len(self._queue[0].items) <= self.max_items):
                    group.append(self._queue.popleft())
                    size += len(group[-1].items)
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
        if len(group) == 1:
            self._alone(group[0])
            return
        try:
            plans, built = self._plan(group)
        except Exception:  # which request caused it is unknown: each runs alone and meets its own
            for request in group:
                self._alone(request)
            return
        start = 0
        for n, (request, plan) in enumerate(zip(group, plans)):
            stop = start + len(plan.accepted)
            try:
                with acting_as(request.actor):
                    if plan.accepted:
                        assert built is not None
                        self.ingestor.commit(plan.accepted, built.part(start, stop), plan.results, plan.counts,
                                             request.action, request.reason)
                    elif plan.counts:
                        with self.parts.lock:
                            self.parts.store.add_stats(plan.counts)
            except Exception as exc:  # it is this request's error, raised in its caller's thread
                request.error = exc
                for later in group[n + 1:]:  # decided against units that were not stored: decide them again
                    self._alone(later)
                return
            request.results = [r for r in plan.results if r is not None]
            start = stop

    def _plan(self, group: list[_Request]) -> tuple[list[_Plan], Built | None]:
        """Every request's decisions in arrival order, and one build (one embedding call) of what they store."""
        p = self.parts
        p.check_open(write=True)
        with p.lock:
            p.search.sync()
        everything = [item for request in group for item in request.items]
        known, forgotten = self.ingestor.lookup(everything, allow_forgotten=False)
        recent: dict[Scope, list[tuple[str, str]]] = {}
        seen: dict[str, str] = {}
        plans: list[_Plan] = []
        for request in group:
            plan = _Plan([], [])
            plan.results, plan.accepted = self.ingestor.decide(
                request.items, known, {} if request.allow_forgotten else forgotten, recent, seen, plan.counts)
            plans.append(plan)
        self.ingestor.reset_chain()
        accepted = [entry for plan in plans for entry in plan.accepted]
        if not accepted:  # all duplicates or redundant: nothing to embed
            return plans, None
        return plans, self.ingestor.build([item for _, item, _ in accepted], [unit_id for _, _, unit_id in accepted])

    def _alone(self, request: _Request) -> None:
        """Write one request as its own call would (its results, or its error)."""
        try:
            with acting_as(request.actor):
                request.results = self.ingestor.ingest(request.items, allow_forgotten=request.allow_forgotten,
                                                       action=request.action, reason=request.reason)
        except Exception as exc:  # handed to the request's caller, raised in its thread
            request.error = exc
