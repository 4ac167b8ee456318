"""What the routes of one app share (``app.state.omnimem``)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

import anyio
import anyio.from_thread

from omnimem.contract.caller import search_slots
from omnimem.server.limits import FailureThrottle, RateLimiter
from omnimem.server.metrics import Metrics

if TYPE_CHECKING:
    from omnimem.memory import LocalMemory
    from omnimem.store.base import KeyStore

T = TypeVar("T")


@dataclass
class ServerState:
    """The Memory, the key store, whether keys are required, the limits, the metrics and the readiness."""

    memory: LocalMemory
    keys: KeyStore  # API keys and console sessions, handed to create_app (by default the memory's store)
    auth: bool
    limiter: RateLimiter | None
    metrics: Metrics
    max_body: int
    max_upload: int
    session_ttl: float
    auth_failures: FailureThrottle | None = None
    ready: bool = False  # the embedder answered once (GET /readyz)
    not_ready: str = "the embedding model is loading"
    reads: anyio.CapacityLimiter | None = None  # searches ranking and packing at once (None: the thread pool's limit)
    searches: anyio.CapacityLimiter | None = None  # threads of plain searches: one embedding its query, one ranking
    waits: anyio.CapacityLimiter | None = None  # threads of searches and asks that wait for a model (None: the pool's)

    async def write(self, work: Callable[[], T]) -> T:
        """Run a write (an add) in a thread of the pool: it never waits for a read slot."""
        return await anyio.to_thread.run_sync(work)

    async def read(self, work: Callable[[], T]) -> T:
        """Run a search in a thread: it holds one of the read slots for its ranking and packing only.

        Its query's embedding (a wait for the model gate behind a write's slice, then the model's call) holds
        none (:mod:`omnimem.contract.caller`), so a search whose query is embedded ranks while others wait
        for the model. At most ``searches`` such threads run; the other searches wait without one.
        """
        return await self._slotted(work, self.searches)

    async def model_read(self, work: Callable[[], T]) -> T:
        """Run a search that waits for a model (``planner="llm"``, an ask) in a thread of its own limiter.

        The search takes one of the read slots for its ranking and packing only
        (:mod:`omnimem.contract.caller`): a slow model holds no slot while other users' searches wait.
        """
        return await self._slotted(work, self.waits)

    async def _slotted(self, work: Callable[[], T], threads: anyio.CapacityLimiter | None) -> T:
        reads = self.reads
        if reads is None:
            return await anyio.to_thread.run_sync(work, limiter=threads)

        def slotted() -> T:
            with search_slots(lambda: _slot(reads)):
                return work()

        return await anyio.to_thread.run_sync(slotted, limiter=threads)


@contextmanager
def _slot(reads: anyio.CapacityLimiter) -> Iterator[None]:
    """One of the read slots, held by a worker thread of the app (waited for on the event loop)."""
    borrower = object()
    anyio.from_thread.run(reads.acquire_on_behalf_of, borrower)
    try:
        yield
    finally:
        anyio.from_thread.run_sync(reads.release_on_behalf_of, borrower)
