"""The door every MCP call goes through: who is calling, may they, and errors in the agent's terms.

:class:`Gate` resolves the :class:`~omnimem.mcp.caller.Caller` of the current
request, checks its role, names it as the audit log's actor for the duration
of the call (:func:`omnimem.contract.caller.acting_as`), and turns an
:class:`~omnimem.errors.OmnimemError` into an MCP tool (or resource) error
whose text is the HTTP API's error body, ``{"error": code, "message": ...}``,
never a traceback.

On HTTP the bearer token is checked before any MCP message is read:
:class:`KeyVerifier` is the server's fastmcp auth provider, so a missing,
unknown or revoked key gets ``401`` from the transport itself. The caller it
resolved travels in the access token's claims and is read back per call with
fastmcp's :func:`~fastmcp.server.dependencies.get_access_token`.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict
from typing import Any

import anyio
from fastmcp.exceptions import FastMCPError, ResourceError, ToolError, ValidationError
from fastmcp.server.auth import AccessToken, TokenVerifier
from fastmcp.server.dependencies import get_access_token
from fastmcp.server.middleware import CallNext, Middleware, MiddlewareContext
from fastmcp.tools import ToolResult
from pydantic import ValidationError as PydanticValidationError

from omnimem.contract.caller import acting_as, writing_via
from omnimem.errors import AuthError, ForbiddenError, InvalidInputError, OmnimemError
from omnimem.mcp.caller import Caller
from omnimem.mcp.refusal import RefusalMessages, missing_key_message, note_refusal

Authorize = Callable[[str | None], Caller]
"""Given the bearer token (``None`` on stdio or in-process), who is calling; raises AuthError if nobody."""

_CLAIM = "omnimem_caller"  # the access token claim that carries the resolved Caller


def error_text(exc: OmnimemError) -> str:
    """The HTTP API's error body, as the text of an MCP error."""
    return json.dumps({"error": exc.code, "message": str(exc)}, ensure_ascii=False)


class Gate:
    """Resolves and checks the caller of each tool call (see the module docstring)."""

    def __init__(self, authorize: Authorize | None, local_actor: str) -> None:
        self.authorize = authorize
        self.local = Caller(local_actor, "admin")  # no authorize: stdio or in-process use by the store's owner

    def caller(self) -> Caller:
        """Who makes the current call: from the verified HTTP token, else ``authorize(None)``."""
        if self.authorize is None:
            return self.local
        token = get_access_token()
        if token is not None and isinstance(token.claims.get(_CLAIM), dict):
            return Caller(**token.claims[_CLAIM])
        return self.authorize(None)

    @contextmanager
    def tool(self, role: str) -> Iterator[Caller]:
        """Inside a tool: the caller (checked for ``role``) as the actor; omnimem errors become tool errors."""
        with self._errors(ToolError):
            caller = self.caller()
            caller.require(role)
            with acting_as(caller.name), writing_via("mcp", caller.max_trust):
                yield caller

    @contextmanager
    def resource(self, role: str) -> Iterator[Caller]:
        """Inside a resource read: as :meth:`tool`, with resource errors."""
        with self._errors(ResourceError):
            caller = self.caller()
            caller.require(role)
            with acting_as(caller.name):
                yield caller

    @staticmethod
    @contextmanager
    def _errors(kind: type[FastMCPError]) -> Iterator[None]:
        try:
            yield
        except OmnimemError as exc:  # the caller's mistake or a store condition: the agent reads code and message
            raise kind(error_text(exc), log_level=logging.INFO if exc.status < 500 else logging.ERROR) from None


class KeyVerifier(TokenVerifier):
    """fastmcp auth provider over ``authorize``: HTTP requests without a valid key are refused with 401."""

    def __init__(self, authorize: Authorize) -> None:
        super().__init__()
        self.authorize = authorize

    async def verify_token(self, token: str) -> AccessToken | None:
        try:  # authorize may read the key table: off the event loop
            caller = await anyio.to_thread.run_sync(self.authorize, token)
        except (AuthError, ForbiddenError) as exc:
            note_refusal(str(exc))  # the 401 then says why (omnimem.mcp.refusal)
            return None
        return AccessToken(token=token, client_id=caller.name, scopes=[caller.role], claims={_CLAIM: asdict(caller)})

    def get_middleware(self) -> list[Any]:
        """fastmcp's bearer-auth middleware, inside one that puts omnimem's reason into every 401."""
        from starlette.middleware import Middleware as HttpMiddleware

        return [HttpMiddleware(RefusalMessages, missing=missing_key_message(self.authorize)),
                *super().get_middleware()]


class InvalidArguments(Middleware):
    """Arguments that fail a tool's input schema become ``InvalidInputError`` tool errors, like the library's."""

    async def on_call_tool(self, context: MiddlewareContext[Any], call_next: CallNext[Any, ToolResult]) -> ToolResult:
        try:
            return await call_next(context)
        except ValidationError as exc:
            cause = exc.__cause__
            message = _summary(cause) if isinstance(cause, PydanticValidationError) else str(exc)
            raise ToolError(error_text(InvalidInputError(message)), log_level=logging.INFO) from None


class NumericStrings(Middleware):
    """An integer argument sent as a string of digits ("5", as some clients send numbers) is taken as that integer.

    Only where it is unambiguous: the tool's schema says the argument is an integer (or a number) and the
    string is a plain decimal numeral; anything else still meets the strict schema and its error.
    """

    async def on_call_tool(self, context: MiddlewareContext[Any], call_next: CallNext[Any, ToolResult]) -> ToolResult:
        arguments = getattr(context.message, "arguments", None)
        server = context.fastmcp_context.fastmcp if context.fastmcp_context is not None else None
        if arguments and server is not None and any(isinstance(v, str) for v in arguments.values()):
            tool = await server.get_tool(context.message.name)
            properties = (tool.parameters.get("properties") or {}) if tool is not None else {}
            for key, value in list(arguments.items()):
                if isinstance(value, str) and _NUMERAL.fullmatch(value) and _numeric(properties.get(key)):
                    arguments[key] = int(value)
        return await call_next(context)


_NUMERAL = re.compile(r"[+-]?[0-9]{1,18}")


def _numeric(schema: Any) -> bool:
    """Whether a JSON schema admits integers and no strings (``{"type": "integer"}``, or it or null)."""
    if not isinstance(schema, dict):
        return False
    options = schema.get("anyOf") or [schema]
    types = {o.get("type") for o in options if isinstance(o, dict)}
    return bool(types & {"integer", "number"}) and "string" not in types and None not in types


def _summary(error: PydanticValidationError) -> str:
    """``field: what is wrong`` for each problem, without pydantic's links."""
    lines = []
    for problem in error.errors(include_url=False):
        where = ".".join(str(part) for part in problem["loc"]) or "arguments"
        lines.append(f"{where}: {problem['msg']}")
    return "; ".join(lines)
