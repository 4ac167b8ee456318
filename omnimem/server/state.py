"""What the routes of one app share (``app.state.omnimem``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from omnimem.server.limits import FailureThrottle, RateLimiter
from omnimem.server.metrics import Metrics

if TYPE_CHECKING:
    from omnimem.memory import Memory


@dataclass
class ServerState:
    """The Memory, whether keys are required, the limits, the metrics and the readiness."""

    memory: Memory
    auth: bool
    limiter: RateLimiter | None
    metrics: Metrics
    max_body: int
    max_upload: int
    session_ttl: float
    auth_failures: FailureThrottle | None = None
    ready: bool = False  # the embedder answered once (GET /readyz)
    not_ready: str = "the embedding model is loading"
