"""Trace context over HTTP: a server span per request, continuing the caller's ``traceparent``.

When tracing is on (:mod:`omnimem.otel`), each HTTP request runs in a span of
kind SERVER named ``METHOD /route/template``, whose parent is the trace context
the request carried (W3C ``traceparent``, or whatever propagator the
application set); the operation spans (``omnimem.search``, ...) are its
children. Only the method, the route template and the status are recorded,
never the path's ids, query strings or bodies. Off, requests pass through.
"""

from __future__ import annotations

import inspect
from typing import Any

from fastapi import FastAPI

from omnimem import otel

Scope = dict[str, Any]


def fastapi_options() -> dict[str, Any]:
    """``FastAPI(**these)``: switch off FastAPI's own request spans and logs where it has them (0.165+).

    Its spans record ``url.path`` and ``url.query`` (unit ids, filters) and its logs the inputs of
    failed validations; :class:`TraceMiddleware` gives the one server span per request instead.
    """
    if "telemetry" not in inspect.signature(FastAPI.__init__).parameters:
        return {}
    return {"telemetry": {"tracing": False, "operation_spans": False, "logs": False}}


class TraceMiddleware:
    """Pure ASGI middleware (it sees every request, the mounted MCP server's too)."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        tr = otel.tracer() if scope["type"] == "http" else None
        if tr is None:
            await self.app(scope, receive, send)
            return
        from opentelemetry import context, propagate, trace

        carrier = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope.get("headers") or ()}
        parent = propagate.extract(carrier)
        method = scope.get("method", "GET")
        span = tr.start_span(f"{method}", context=parent, kind=trace.SpanKind.SERVER,
                             attributes={"http.request.method": method})
        status: list[int] = []

        async def send_status(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                status.append(int(message["status"]))
            await send(message)

        token = context.attach(trace.set_span_in_context(span, parent))
        try:
            await self.app(scope, receive, send_status)
        except BaseException as exc:
            span.set_attribute("error.type", type(exc).__name__)
            span.set_status(trace.Status(trace.StatusCode.ERROR, type(exc).__name__))
            raise
        finally:
            context.detach(token)
            route = getattr(scope.get("route"), "path", None)
            if route:
                span.update_name(f"{method} {route}")
                span.set_attribute("http.route", route)
            if status:
                span.set_attribute("http.response.status_code", status[0])
                if status[0] >= 500:
                    span.set_status(trace.Status(trace.StatusCode.ERROR))
            span.end()
