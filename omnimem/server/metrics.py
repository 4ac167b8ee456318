"""Prometheus metrics of one app: request counts and latencies per route (a registry per app)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

Message = dict[str, Any]
ASGIApp = Callable[..., Any]


class Metrics:
    """Counters and histograms registered in the app's own registry (two apps never share one)."""

    content_type = CONTENT_TYPE_LATEST

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter("omnimem_http_requests", "HTTP requests answered, by route and status",
                                ["method", "route", "status"], registry=self.registry)
        self.latency = Histogram("omnimem_http_request_seconds", "Time to answer an HTTP request, by route",
                                 ["method", "route"], registry=self.registry)

    def render(self) -> bytes:
        return generate_latest(self.registry)


class MetricsMiddleware:
    """Times every HTTP request and counts it under its route template (``/v1/units/{unit_id}``)."""

    def __init__(self, app: ASGIApp, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: dict[str, Any], receive: Callable[[], Any],
                       send: Callable[[Message], Any]) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500

        async def noting(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, noting)
        finally:
            route = scope.get("route")
            name = getattr(route, "path", None) or "unmatched"
            method = str(scope.get("method", ""))
            self.metrics.requests.labels(method, name, str(status)).inc()
            self.metrics.latency.labels(method, name).observe(time.perf_counter() - started)
