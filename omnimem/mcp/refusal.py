"""A 401 from the MCP endpoint says omnimem's reason, not fastmcp's OAuth advice.

fastmcp answers a refused bearer token with a 401 whose body and
``WWW-Authenticate`` header tell the client to "clear authentication tokens
... and re-register" (an OAuth flow omnimem's API keys do not have), and a
missing one with an empty body. :class:`RefusalMessages` wraps the endpoint
(outermost, as the auth provider's first HTTP middleware): the key verifier
records why it refused the key (:func:`note_refusal`) and the 401 is rewritten
to carry that message, as the HTTP API's error body
``{"error": "AuthError", "message": ...}``; the challenge keeps RFC 6750's
form (``error="invalid_token"`` only when a token was sent).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any

from omnimem.errors import OmnimemError

_REASONS: ContextVar[list[str] | None] = ContextVar("omnimem_mcp_refusals", default=None)

Message = dict[str, Any]
Send = Callable[[Message], Any]


def note_refusal(reason: str) -> None:
    """Record why the current request's key was refused (read back when its 401 is sent)."""
    reasons = _REASONS.get()
    if reasons is not None:
        reasons.append(reason)


class RefusalMessages:
    """ASGI middleware: 401 responses carry omnimem's reason (see the module docstring)."""

    def __init__(self, app: Any, missing: Callable[[], str]) -> None:
        self.app = app
        self.missing = missing  # the message for a request that sent no key at all

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        reasons: list[str] = []
        token = _REASONS.set(reasons)  # a mutable holder: the verifier appends to it further down the chain
        replaced = False

        async def rewrite(message: Message) -> None:
            nonlocal replaced
            if message["type"] == "http.response.start" and message["status"] == 401:
                replaced = True
                reason = reasons[-1] if reasons else self.missing()
                body = json.dumps({"error": "AuthError", "message": reason}, ensure_ascii=False).encode()
                challenge = ('Bearer error="invalid_token", error_description="' + reason.replace('"', "'") + '"'
                             if reasons else "Bearer")
                await send({**message, "headers": [
                    *[(k, v) for k, v in message.get("headers", [])
                      if k.lower() not in (b"content-length", b"content-type", b"www-authenticate")],
                    (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                    (b"www-authenticate", challenge.encode("latin-1", "replace"))]})
                await send({"type": "http.response.body", "body": body})
                return
            if replaced and message["type"] == "http.response.body":
                return  # fastmcp's own body: already replaced
            await send(message)

        try:
            await self.app(scope, receive, rewrite)
        finally:
            _REASONS.reset(token)


def missing_key_message(authorize: Callable[[str | None], Any]) -> Callable[[], str]:
    """What ``authorize`` says to a request without a key (its AuthError's message)."""

    def message() -> str:
        try:
            authorize(None)
        except OmnimemError as exc:
            return str(exc)
        return "this MCP endpoint needs an API key: send Authorization: Bearer <key>"

    return message
