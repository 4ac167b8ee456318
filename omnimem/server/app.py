"""``create_app(memory)``: the FastAPI app of the HTTP API (``docs/http-api.md``)."""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import anyio
from fastapi import Depends, FastAPI, Request, Response
from fastapi.responses import JSONResponse

from omnimem.errors import ConfigError
from omnimem.server import errors
from omnimem.server.auth import Principal, authenticate
from omnimem.server.console import mount_console
from omnimem.server.docs import mount_docs
from omnimem.server.guard import ANY_HOST, DEFAULT_BODY_TIMEOUT, RequestGuard, host_names
from omnimem.server.limits import (DEFAULT_AUTH_FAILURES, BodyLimit, FailureThrottle, RateLimit, RateLimiter,
                                   ThrottledAuth)
from omnimem.server.metrics import Metrics, MetricsMiddleware
from omnimem.server.routes import governance, graph, media, search, session, units
from omnimem.server.state import ServerState
from omnimem.server import tracing

if TYPE_CHECKING:
    from omnimem.memory import LocalMemory
    from omnimem.store.base import KeyStore

DEFAULT_MAX_BODY = 16 * 1024 * 1024  # JSON bodies: a large dialogue batch fits
DEFAULT_MAX_UPLOAD = 256 * 1024 * 1024  # media uploads and imports (images are held to 50 MiB on top)
UPLOAD_PATHS = ("/v1/images", "/v1/audio", "/v1/videos", "/v1/import")
DEFAULT_SEARCH_CONCURRENCY = max(2, os.cpu_count() or 2)  # enough to keep the cores busy; the rest wait their turn
MODEL_WAITS = 32  # searches and asks waiting for the model at once, a thread each (the rest wait without one)
_DEFAULT_LIMIT = RateLimit()
log = logging.getLogger("omnimem.server")


def create_app(
    memory: LocalMemory,
    *,
    keys: KeyStore | None = None,
    auth: bool = True,
    rate_limit: RateLimit | None = _DEFAULT_LIMIT,
    max_body: int = DEFAULT_MAX_BODY,
    max_upload: int = DEFAULT_MAX_UPLOAD,
    session_ttl: float = 12 * 3600.0,
    mcp: Any = True,
    close_memory: bool = False,
    allowed_hosts: Sequence[str] = (),
    body_timeout: float | None = DEFAULT_BODY_TIMEOUT,
    auth_failures: RateLimit | None = DEFAULT_AUTH_FAILURES,
    public_metrics: bool = False,
    search_concurrency: int | None = DEFAULT_SEARCH_CONCURRENCY,
) -> FastAPI:
    """The HTTP API over ``memory`` (a Memory in this process).

    ``keys`` holds the API keys and console sessions requests are checked
    against; by default ``memory``'s own store (``omnimem keys create`` writes there).

    ``auth=False`` treats every request as a store-wide admin (``omnimem serve
    --no-auth``, loopback only). ``rate_limit`` is per key (``None``: off);
    ``max_body`` bounds JSON bodies and ``max_upload`` uploads and imports (413
    beyond). ``mcp``: ``True`` (default) mounts the MCP server
    (:func:`omnimem.mcp.create_mcp`) at ``/mcp`` with the same API keys as
    bearer tokens; an ASGI app mounts that app instead; ``False`` mounts none.
    ``close_memory``: close ``memory`` when the server shuts down (``omnimem serve``).

    Every request first passes :class:`~omnimem.server.guard.RequestGuard`:
    its Host must be a loopback name or one of ``allowed_hosts`` (``"*"``:
    any, refused with ``auth=False``), a state change from another origin
    needs the CSRF header, and its body must arrive within ``body_timeout``
    seconds (``None``: no limit). ``auth_failures`` throttles failed
    authentications per client address (``None``: off). ``/metrics`` needs an
    admin key unless ``public_metrics``. At start the embedder is loaded in
    the background; ``/readyz`` answers 200 once it has embedded once.
    At most ``search_concurrency`` searches run at once (``None``:
    only the thread pool's limit); writes never wait for one of those slots.
    A search holds a slot for its ranking and packing only: never while its
    query is embedded, nor while an LLM (``planner="llm"``, an ask) answers.
    """
    if max_body < 1 or max_upload < 1 or not session_ttl > 0:
        raise ConfigError("max_body, max_upload and session_ttl must be positive")
    if body_timeout is not None and not body_timeout > 0:
        raise ConfigError("body_timeout must be positive (None: no limit)")
    if search_concurrency is not None and search_concurrency < 1:
        raise ConfigError("search_concurrency must be at least 1 (None: no limit of its own)")
    hosts = host_names(allowed_hosts)
    if not auth and ANY_HOST in hosts:
        raise ConfigError("--no-auth answers only for loopback names and --allowed-host names, never for any Host")
    keys = memory.store if keys is None else keys
    mcp_app = _mcp_app(memory, keys, auth) if mcp is True else (mcp or None)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        threading.Thread(target=_warm_up, args=(state,), name="omnimem-warm-up", daemon=True).start()
        try:
            if mcp_app is not None and hasattr(mcp_app, "lifespan"):
                async with mcp_app.lifespan(app):  # Starlette does not run a mounted app's lifespan
                    yield
            else:
                yield
        finally:
            if close_memory:
                memory.close()

    app = FastAPI(lifespan=lifespan, title="omnimem", version="1", summary="Lifelong multimodal memory for AI agents",
                  description="The HTTP API of omnimem; see docs/http-api.md.", docs_url=None, redoc_url=None,
                  **tracing.fastapi_options())
    state = ServerState(memory, keys, auth, RateLimiter(rate_limit) if rate_limit is not None else None, Metrics(),
                        max_body, max_upload, session_ttl,
                        FailureThrottle(auth_failures) if auth_failures is not None and auth else None,
                        reads=anyio.CapacityLimiter(search_concurrency) if search_concurrency is not None else None,
                        searches=anyio.CapacityLimiter(2 * search_concurrency) if search_concurrency is not None
                        else None, waits=anyio.CapacityLimiter(MODEL_WAITS))
    app.state.omnimem = state
    errors.install(app)
    for module in (units, media, search, governance, graph, session):
        app.include_router(module.router)

    @app.get("/healthz", tags=["ops"])
    async def healthz() -> dict[str, Any]:
        """Liveness (no auth), and whether the store is read-only."""
        return {"status": "ok", "read_only": memory.read_only}

    @app.get("/readyz", tags=["ops"], responses={503: {"description": "Not ready yet (the model is loading)"}})
    async def readyz() -> JSONResponse:
        """Readiness (no auth): 200 once the embedding model is loaded, 503 (and why) before."""
        if state.ready:
            return JSONResponse({"status": "ready"})
        return JSONResponse({"status": "starting", "message": state.not_ready}, status_code=503)

    def metrics_reader(request: Request) -> Principal | None:
        if public_metrics:
            return None
        principal = authenticate(request)
        principal.require("admin")
        return principal

    @app.get("/metrics", tags=["ops"], response_class=Response,
             responses={200: {"content": {"text/plain": {}}, "description": "Prometheus text format"}})
    def metrics(_: Principal | None = Depends(metrics_reader)) -> Response:
        """Request counts and latencies per route, in the Prometheus text format (an admin key, unless the
        server runs with ``--public-metrics``)."""
        return Response(state.metrics.render(), media_type=state.metrics.content_type)

    # -- MCP: the MCP server (omnimem.mcp.create_mcp) is mounted here, at /mcp, when given ----------
    if mcp_app is not None:  # clients connect to /mcp/; its bad keys count against the address like the API's
        mounted: Any = ThrottledAuth(mcp_app, state.auth_failures) if state.auth_failures is not None else mcp_app
        app.mount("/mcp", mounted)
    mount_console(app)  # the web console at / (assets under /console/), with its CSP
    mount_docs(app)  # /docs and /redoc from the package's own files, with their CSP

    def limit_for(path: str) -> int:
        return max_upload if path.startswith(UPLOAD_PATHS) else max_body

    app.add_middleware(BodyLimit, limit_for=limit_for)
    app.add_middleware(MetricsMiddleware, metrics=state.metrics)
    app.add_middleware(tracing.TraceMiddleware)  # a server span per request (under the caller's traceparent), inside the guard
    app.add_middleware(RequestGuard, allowed_hosts=hosts, body_timeout=body_timeout)  # before anything but:
    app.add_middleware(errors.UnexpectedErrors)  # outermost: any exception left is a 500, the connection kept
    return app


def _warm_up(state: ServerState) -> None:
    """Load the embedding model now, not in the first request that needs it (``/readyz`` says when)."""
    try:
        state.memory.embedder.embed(["omnimem readiness check"])
    except Exception as exc:  # noqa: BLE001 - reported by /readyz and the log; requests still raise their own
        state.not_ready = f"the embedding model failed to load: {type(exc).__name__}: {exc}"
        log.warning("%s", state.not_ready)
        return
    state.ready = True


def _mcp_app(memory: LocalMemory, keys: KeyStore, auth: bool) -> Any:
    """The MCP server over ``memory``, as a streamable-HTTP ASGI app; API keys are its bearer tokens."""
    from omnimem.store.apikeys import check_key
    from omnimem.errors import AuthError
    from omnimem.mcp import Caller, create_mcp

    def authorize(token: str | None) -> Caller:
        if not token:
            raise AuthError("missing API key: send Authorization: Bearer <key>")
        record = check_key(keys, token)
        return Caller(f"key:{record.name}", record.role, record.user_id, record.agent_id, record.max_trust)

    return create_mcp(memory, authorize=authorize if auth else None).http_app(path="/")
