"""Errors over the wire: every failure is ``{"error": <OmnimemError class name>, "message": ...}``.

The status is the class's ``status``; the remote client maps ``error`` back
to the same class (:func:`omnimem.errors.error_class`). Anything unexpected
is a 500 that names no internals (it is logged here instead).
"""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException

from omnimem.errors import OmnimemError, RateLimitError
from omnimem.server.limits import retry_after_header
from omnimem.server.models import ErrorBody

log = logging.getLogger("omnimem.server")

_HTTP_CODES = {404: "NotFoundError", 401: "AuthError", 403: "ForbiddenError", 413: "PayloadTooLargeError",
               415: "UnsupportedMediaError", 429: "RateLimitError"}

ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    status: {"model": ErrorBody, "description": what} for status, what in (
        (400, "Bad input (InvalidInputError and subclasses)"), (401, "No valid API key or session (AuthError)"),
        (403, "Role too low, scope not allowed, or CSRF token missing (ForbiddenError, ScopeError, CsrfError)"),
        (404, "Not found, or not in the key's scope (NotFoundError)"), (409, "Store state conflict"),
        (413, "Body or upload too large (PayloadTooLargeError)"), (415, "Wrong content type"),
        (422, "Body does not match the schema (InvalidInputError)"), (429, "Rate limited (RateLimitError)"),
        (501, "Not available on this server (MissingDependencyError, LLMNotConfiguredError)"),
        (502, "An LLM behind the server failed (LLMError)"), (503, "An LLM behind the server is unavailable"))
}


def error_response(code: str, message: str, status: int, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"error": code, "message": message}, status_code=status, headers=headers)


def install(app: FastAPI) -> None:
    """Register the handlers that turn exceptions into error bodies."""

    async def omnimem_error(_: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, OmnimemError)
        headers = {"Retry-After": retry_after_header(exc)} if isinstance(exc, RateLimitError) else None
        if exc.status >= 500:
            log.warning("%s: %s", exc.code, exc)
        return error_response(exc.code, str(exc) or exc.code, exc.status, headers)

    async def invalid_request(_: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, RequestValidationError)
        return error_response("InvalidInputError", _describe(exc), 422)

    async def http_error(_: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, HTTPException)
        code = _HTTP_CODES.get(exc.status_code, "InvalidInputError")
        return error_response(code, str(exc.detail), exc.status_code, dict(exc.headers or {}))

    async def unexpected(_: Request, exc: Exception) -> JSONResponse:
        log.exception("unexpected error while serving a request", exc_info=exc)
        return error_response("OmnimemError", "internal server error", 500)

    app.add_exception_handler(OmnimemError, omnimem_error)
    app.add_exception_handler(RequestValidationError, invalid_request)
    app.add_exception_handler(HTTPException, http_error)
    app.add_exception_handler(Exception, unexpected)


def _describe(exc: RequestValidationError) -> str:
    """One line per problem: where it is and what is wrong (never the rejected value itself)."""
    lines = []
    for problem in exc.errors()[:5]:
        where = ".".join(str(p) for p in problem.get("loc", ()) if p != "body") or "body"
        lines.append(f"{where}: {problem.get('msg', 'invalid')}")
    return "; ".join(lines) or "the request does not match the API schema"
