"""``create_app(memory)``: the FastAPI app of the HTTP API (``docs/http-api.md``)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from fastapi import FastAPI, Request, Response

from omnimem.errors import ConfigError
from omnimem.server import errors
from omnimem.server.console import mount_console
from omnimem.server.limits import BodyLimit, RateLimit, RateLimiter
from omnimem.server.metrics import Metrics, MetricsMiddleware
from omnimem.server.routes import governance, graph, media, search, session, units
from omnimem.server.state import ServerState
from omnimem.server import tracing

if TYPE_CHECKING:
    from omnimem.memory import Memory

DEFAULT_MAX_BODY = 16 * 1024 * 1024  # JSON bodies: a large dialogue batch fits
DEFAULT_MAX_UPLOAD = 256 * 1024 * 1024  # media uploads and imports (images are held to 50 MiB on top)
UPLOAD_PATHS = ("/v1/images", "/v1/audio", "/v1/videos", "/v1/import")
_DEFAULT_LIMIT = RateLimit()


def create_app(
    memory: Memory,
    *,
    auth: bool = True,
    rate_limit: RateLimit | None = _DEFAULT_LIMIT,
    max_body: int = DEFAULT_MAX_BODY,
    max_upload: int = DEFAULT_MAX_UPLOAD,
    session_ttl: float = 12 * 3600.0,
    mcp: Any = True,
    close_memory: bool = False,
) -> FastAPI:
    """The HTTP API over ``memory``.

    ``auth=False`` treats every request as a store-wide admin (``omnimem serve
    --no-auth``, loopback only). ``rate_limit`` is per key (``None``: off);
    ``max_body`` bounds JSON bodies and ``max_upload`` uploads and imports (413
    beyond). ``mcp``: ``True`` (default) mounts the MCP server
    (:func:`omnimem.mcp.create_mcp`) at ``/mcp`` with the same API keys as
    bearer tokens; an ASGI app mounts that app instead; ``False`` mounts none.
    ``close_memory``: close ``memory`` when the server shuts down (``omnimem serve``).
    """
    if max_body < 1 or max_upload < 1 or not session_ttl > 0:
        raise ConfigError("max_body, max_upload and session_ttl must be positive")
    mcp_app = _mcp_app(memory, auth) if mcp is True else (mcp or None)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
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
                  description="The HTTP API of omnimem; see docs/http-api.md.", **tracing.fastapi_options())
    state = ServerState(memory, auth, RateLimiter(rate_limit) if rate_limit is not None else None, Metrics(),
                        max_body, max_upload, session_ttl)
    app.state.omnimem = state
    errors.install(app)
    for module in (units, media, search, governance, graph, session):
        app.include_router(module.router)

    @app.get("/healthz", tags=["ops"])
    def healthz() -> dict[str, Any]:
        """Liveness (no auth), and whether the store is read-only."""
        return {"status": "ok", "read_only": memory.read_only}

    @app.get("/metrics", tags=["ops"], response_class=Response,
             responses={200: {"content": {"text/plain": {}}, "description": "Prometheus text format"}})
    def metrics(request: Request) -> Response:
        """Request counts and latencies per route, in the Prometheus text format."""
        return Response(state.metrics.render(), media_type=state.metrics.content_type)

    # -- MCP: the MCP server (omnimem.mcp.create_mcp) is mounted here, at /mcp, when given ----------
    if mcp_app is not None:
        app.mount("/mcp", mcp_app)  # clients connect to /mcp/
    mount_console(app)  # the web console at / (assets under /console/), with its CSP

    def limit_for(path: str) -> int:
        return max_upload if path.startswith(UPLOAD_PATHS) else max_body

    app.add_middleware(BodyLimit, limit_for=limit_for)
    app.add_middleware(MetricsMiddleware, metrics=state.metrics)
    app.add_middleware(tracing.TraceMiddleware)  # outermost: a server span per request, under the caller's traceparent
    return app


def _mcp_app(memory: Memory, auth: bool) -> Any:
    """The MCP server over ``memory``, as a streamable-HTTP ASGI app; API keys are its bearer tokens."""
    from omnimem.server.apikeys import check_key
    from omnimem.errors import AuthError
    from omnimem.mcp import Caller, create_mcp

    def authorize(token: str | None) -> Caller:
        if not token:
            raise AuthError("missing API key: send Authorization: Bearer <key>")
        record = check_key(memory.store, token)
        return Caller(f"key:{record.name}", record.role, record.user_id, record.agent_id)

    return create_mcp(memory, authorize=authorize if auth else None).http_app(path="/")
