"""What the routes of one app share (``app.state.omnimem``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

import anyio

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
    reads: anyio.CapacityLimiter | None = None  # searches at once (None: only the thread pool's limit)

    async def write(self, work: Callable[[], T]) -> T:
        """Run a write (an add) in a thread of the pool: it never waits for a read slot."""
        return await anyio.to_thread.run_sync(work)

    async def read(self, work: Callable[[], T]) -> T:
        """Run a read (a search) in a thread, holding one of the read slots while it runs."""
        return await anyio.to_thread.run_sync(work, limiter=self.reads)
