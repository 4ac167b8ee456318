"""Errors over the wire: every failure is ``{"error": <OmnimemError class name>, "message": ...}``.

The status is the class's ``status``; the remote client maps ``error`` back
to the same class (:func:`omnimem.errors.error_class`). Anything unexpected
is a 500 that names no internals (it is logged here instead), answered by
:class:`UnexpectedErrors` so that a kept-alive connection stays usable.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Scope

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

    app.add_exception_handler(OmnimemError, omnimem_error)
    app.add_exception_handler(RequestValidationError, invalid_request)
    app.add_exception_handler(HTTPException, http_error)


class UnexpectedErrors:
    """ASGI middleware: an exception no handler took becomes the 500 error body, and the connection lives on.

    Starlette's own last resort (``ServerErrorMiddleware``) sends its 500 and
    then raises the exception again, so uvicorn closes the socket after an
    answer that never said ``Connection: close``: a kept-alive client's next
    request meets a reset. Here the exception ends with the answer. Only when
    part of an answer is out already (a stream that failed midway) is it
    raised on, and uvicorn's closing the connection is what tells the client.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Callable[[], Any], send: Callable[[Message], Any]) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = finished = False

        async def noting(message: Message) -> None:
            nonlocal started, finished
            if message["type"] == "http.response.start":
                started = True
            elif message["type"] == "http.response.body" and not message.get("more_body", False):
                finished = True
            await send(message)

        try:
            await self.app(scope, receive, noting)
        except Exception as exc:
            if started and not finished:
                raise
            log.exception("unexpected error while serving a request", exc_info=exc)
            if not started:
                await error_response("OmnimemError", "internal server error", 500)(scope, receive, send)


def _describe(exc: RequestValidationError) -> str:
    """One line per problem: where it is and what is wrong (never the rejected value itself)."""
    lines = []
    for problem in exc.errors()[:5]:
        if problem.get("type") == "json_invalid":  # FastAPI's own words are "<offset>: JSON decode error"
            return _not_json(problem, exc.body)
        where = ".".join(str(p) for p in problem.get("loc", ()) if p != "body") or "body"
        lines.append(f"{where}: {problem.get('msg', 'invalid')}")
    return "; ".join(lines) or "the request does not match the API schema"


def _not_json(problem: dict[str, Any], body: Any) -> str:
    """``the body is not valid JSON: Expecting value at line 1 column 10``, as :mod:`json` words it."""
    what = str(problem.get("ctx", {}).get("error") or "it does not parse")
    loc = problem.get("loc", ())
    offset = loc[-1] if loc and isinstance(loc[-1], int) else None
    if offset is None:
        return f"the body is not valid JSON: {what}"
    if isinstance(body, (bytes, bytearray)):
        body = bytes(body).decode("utf-8", "replace")
    what += "" if what.endswith(" at") else " at"  # json's "Unterminated string starting at" names its place
    if not isinstance(body, str):
        return f"the body is not valid JSON: {what} character {offset + 1}"
    line = body.count("\n", 0, offset) + 1
    column = offset - body.rfind("\n", 0, offset)
    return f"the body is not valid JSON: {what} line {line} column {column}"
