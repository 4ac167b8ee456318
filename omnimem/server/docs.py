"""The API's interactive docs, ``/docs`` (Swagger UI) and ``/redoc``, served without any outside host.

FastAPI's own pages load Swagger UI and ReDoc from a CDN (a blank page
offline, and scripts of another host on the server's origin). Here the
scripts and styles are the files the ``fastapi-offline`` package ships,
served under ``/docs-assets/``, and both pages carry a Content-Security-Policy
that allows scripts from this origin only, plus the one inline script that
starts Swagger UI, by its hash.
"""

from __future__ import annotations

import base64
import hashlib
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

from omnimem.errors import missing_extra

if TYPE_CHECKING:
    from fastapi import FastAPI

ASSETS = "/docs-assets"

_SWAGGER_START = (
    "SwaggerUIBundle({url: '/openapi.json', dom_id: '#swagger-ui', deepLinking: true, "
    "presets: [SwaggerUIBundle.presets.apis, SwaggerUIBundle.SwaggerUIStandalonePreset], layout: 'BaseLayout'});"
)
_SWAGGER_PAGE = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>omnimem API - Swagger UI</title>
<link rel="stylesheet" href="{ASSETS}/swagger-ui.css"><link rel="icon" href="{ASSETS}/favicon.png"></head>
<body><div id="swagger-ui"></div><script src="{ASSETS}/swagger-ui-bundle.js"></script>
<script>{_SWAGGER_START}</script></body></html>
"""
_REDOC_PAGE = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>omnimem API - ReDoc</title>
<link rel="icon" href="{ASSETS}/favicon.png"></head>
<body><redoc spec-url="/openapi.json"></redoc><script src="{ASSETS}/redoc.standalone.js"></script></body></html>
"""


def _script_hash(script: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii") + "'"


# Both UIs set inline style attributes and ReDoc starts a worker from a blob; nothing loads from elsewhere.
DOCS_CSP = (
    f"default-src 'none'; script-src 'self' {_script_hash(_SWAGGER_START)}; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; font-src 'self' data:; connect-src 'self'; worker-src 'self' blob:; base-uri 'none'; "
    "form-action 'none'; frame-ancestors 'none'"
)


def assets_dir() -> Path:
    """Swagger UI's and ReDoc's files as the installed ``fastapi-offline`` package ships them."""
    try:
        folder = Path(str(resources.files("fastapi_offline") / "static"))
    except ModuleNotFoundError:
        raise missing_extra("fastapi-offline", "server") from None
    if not (folder / "swagger-ui-bundle.js").is_file() or not (folder / "redoc.standalone.js").is_file():
        raise FileNotFoundError(f"the API docs' assets are missing from {folder}")
    return folder


def mount_docs(app: FastAPI) -> None:
    """Serve ``/docs``, ``/redoc`` and their assets from ``app`` (create it with ``docs_url=None, redoc_url=None``)."""
    from fastapi.responses import HTMLResponse
    from fastapi.staticfiles import StaticFiles

    app.mount(ASSETS, StaticFiles(directory=assets_dir()), name="docs-assets")
    headers = {"Content-Security-Policy": DOCS_CSP, "X-Frame-Options": "DENY", "Referrer-Policy": "no-referrer"}

    @app.get("/docs", include_in_schema=False)
    def swagger_ui() -> HTMLResponse:
        return HTMLResponse(_SWAGGER_PAGE, headers=headers)

    @app.get("/redoc", include_in_schema=False)
    def redoc() -> HTMLResponse:
        return HTMLResponse(_REDOC_PAGE, headers=headers)
