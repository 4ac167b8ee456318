"""What the routes of one app share (``app.state.omnimem``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from omnimem.server.limits import RateLimiter
from omnimem.server.metrics import Metrics

if TYPE_CHECKING:
    from omnimem.memory import Memory


@dataclass
class ServerState:
    """The Memory, whether keys are required, the limits and the metrics."""

    memory: Memory
    auth: bool
    limiter: RateLimiter | None
    metrics: Metrics
    max_body: int
    max_upload: int
    session_ttl: float
