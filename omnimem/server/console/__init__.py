"""The web console: static assets served by the HTTP API's own app, with a strict CSP.

The console is plain ES modules, CSS and one HTML page shipped inside the
package (``static/``); it talks to the server only through the documented API
(``docs/http-api.md``) with the session cookie and the ``X-CSRF-Token`` header.
``mount_console(app)`` serves ``/`` and ``/console/*`` and adds security headers:
a Content-Security-Policy that allows scripts, styles and connections to this
origin only (no inline script or style, no framing), ``nosniff`` and no referrer.
Raw content downloaded from ``/v1/units/{id}/raw`` is sandboxed too, so an
uploaded HTML or SVG file opened directly can never run script in the console's
origin.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fastapi import FastAPI
    from starlette.types import ASGIApp, Message, Receive, Scope, Send

CONSOLE_CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' blob: data:; "
    "media-src 'self' blob:; connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'self'; "
    "frame-ancestors 'none'"
)
RAW_CSP = "default-src 'none'; img-src 'self'; media-src 'self'; style-src 'unsafe-inline'; sandbox; frame-ancestors 'none'"

CONSOLE_HEADERS: dict[str, str] = {
    "Content-Security-Policy": CONSOLE_CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cache-Control": "no-cache",
}


def static_dir() -> Path:
    """The folder of the console's assets inside the installed package."""
    return Path(str(resources.files(__name__) / "static"))


def is_console_path(path: str) -> bool:
    return path == "/" or path == "/console" or path.startswith("/console/")


def is_raw_path(path: str) -> bool:
    return path.startswith("/v1/units/") and path.endswith("/raw")


class SecurityHeaders:
    """ASGI middleware: the console's headers on its pages, a sandbox on raw content, nosniff everywhere.

    A plain ASGI wrapper rather than ``BaseHTTPMiddleware`` so streamed
    responses (export) pass through untouched.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path = str(scope.get("path", ""))
        extra = CONSOLE_HEADERS if is_console_path(path) else (
            {"Content-Security-Policy": RAW_CSP, "X-Content-Type-Options": "nosniff"} if is_raw_path(path)
            else {"X-Content-Type-Options": "nosniff"})

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                present = {name.lower() for name, _ in headers}
                for name, value in extra.items():
                    if name.lower().encode("latin-1") not in present:
                        headers.append((name.lower().encode("latin-1"), value.encode("latin-1")))
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, send_with_headers)


def mount_console(app: FastAPI) -> None:
    """Serve the console at ``/`` (its assets under ``/console/``) from ``app``, with its security headers."""
    from fastapi.responses import FileResponse, RedirectResponse
    from fastapi.staticfiles import StaticFiles

    folder = static_dir()
    index = folder / "index.html"
    if not index.is_file():  # a broken install must not serve a blank page silently
        raise FileNotFoundError(f"the console's assets are missing from {folder}")

    @app.get("/", include_in_schema=False)
    def console_index() -> FileResponse:
        return FileResponse(index, media_type="text/html; charset=utf-8")

    @app.get("/console", include_in_schema=False)
    def console_root() -> RedirectResponse:
        return RedirectResponse("/", status_code=307)

    app.mount("/console", StaticFiles(directory=folder), name="console")
    app.add_middleware(SecurityHeaders)
