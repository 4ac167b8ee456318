"""What every request passes before any route, the MCP server or the console sees it.

:class:`RequestGuard` is a pure ASGI middleware in front of the whole app:

- **Host allow-list.** A request whose ``Host`` is not one of the names the
  server answers for is refused (403 ``HostNotAllowedError``). Loopback names
  are the default, so a page that rebinds its own DNS name to 127.0.0.1 can
  reach nothing (DNS rebinding); ``--allowed-host`` adds the names a proxy or
  LAN uses, ``*`` turns the check off (never with ``--no-auth``).
- **Origin.** A state-changing request (not GET/HEAD/OPTIONS) that a browser
  sent from another origin (its ``Origin``, else ``Sec-Fetch-Site``, says so)
  is refused (403 ``CsrfError``) unless it carries the ``X-CSRF-Token``
  header, whatever its content type: a no-cors multipart or text/plain form
  post is refused like JSON. A page on another origin cannot add that header
  without a CORS preflight, which this server never grants; a cookie session
  still checks the token's value (:mod:`omnimem.server.auth`).
- **Body timeout.** A request body must arrive completely within
  ``body_timeout`` seconds of the request's start; otherwise the answer is
  408 ``RequestTimeoutError`` and the connection is closed, so bodies that
  never finish cannot hold connections (and their memory) forever.

Refusals are the API's error bodies (``{"error", "message"}``) with
``Connection: close``.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable
from typing import Any
from urllib.parse import urlsplit

from omnimem.errors import ConfigError, CsrfError, HostNotAllowedError, OmnimemError, RequestTimeoutError
from omnimem.server.limits import answer_error, run_refusing_mid_body

Scope = dict[str, Any]
Message = dict[str, Any]
ASGIApp = Callable[..., Any]

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")
ANY_HOST = "*"
DEFAULT_BODY_TIMEOUT = 60.0
CSRF_HEADER = b"x-csrf-token"
_SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
_CROSS_SITE = frozenset({"cross-site", "same-site"})  # same-site is another port or subdomain: another origin


def host_names(extra: Iterable[str] = ()) -> tuple[str, ...]:
    """The loopback names plus ``extra`` (lower case, without ports or brackets), in order, once each."""
    names: list[str] = []
    for name in (*LOOPBACK_HOSTS, *extra):
        raw = name.strip().lower()
        clean = ANY_HOST if raw == ANY_HOST else _hostname(raw)
        if not clean or "/" in raw or "@" in raw or " " in raw:
            raise ConfigError(f"{name!r} is not a host name (give names like memory.example.com, no scheme or port)")
        if clean not in names:
            names.append(clean)
    return tuple(names)


def _hostname(host: str) -> str:
    """``Host`` header -> its name: ``[::1]:8420`` -> ``::1``, ``Example.COM.:80`` -> ``example.com``."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[1:host.find("]")] if "]" in host else ""
    if host.count(":") == 1:
        host = host.partition(":")[0]
    return host.rstrip(".")


def _authority(host: str) -> str:
    """A ``Host`` value or an origin's netloc compared as name and port, default ports dropped."""
    host = host.strip().lower()
    for default in (":80", ":443"):
        if host.endswith(default):
            return host[: -len(default)]
    return host


class RequestGuard:
    """Host allow-list, cross-origin write refusal and the body timeout (see the module docstring).

    ``allowed_hosts``: names as :func:`host_names` makes them (``("*",)``: any
    Host); ``body_timeout``: seconds, ``None`` for none.
    """

    def __init__(self, app: ASGIApp, *, allowed_hosts: Iterable[str], body_timeout: float | None) -> None:
        self.app = app
        self.allowed = frozenset(allowed_hosts)
        self.body_timeout = body_timeout

    async def __call__(self, scope: Scope, receive: Callable[[], Any], send: Callable[[Message], Any]) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        headers = _headers(scope)
        refusal = self._refusal(scope, headers)
        if refusal is not None:
            if scope["type"] == "websocket":
                await send({"type": "websocket.close", "code": 1008})
            else:
                await answer_error(send, refusal)
            return
        if scope["type"] == "http" and self.body_timeout is not None:
            await self._with_deadline(scope, receive, send, self.body_timeout)
        else:
            await self.app(scope, receive, send)

    def _refusal(self, scope: Scope, headers: dict[bytes, str]) -> OmnimemError | None:
        host = headers.get(b"host", "")
        if ANY_HOST not in self.allowed and _hostname(host) not in self.allowed:
            shown = host[:100] or "(none)"
            return HostNotAllowedError(f"this server does not answer for Host {shown}; start it with "
                                       f"--allowed-host {_hostname(host) or 'NAME'} to allow that name")
        method = str(scope.get("method", "GET"))
        if scope["type"] == "http" and method not in _SAFE_METHODS and CSRF_HEADER not in headers \
                and _cross_origin(headers, host):
            return CsrfError(f"a {method} from another origin ({headers.get(b'origin', 'a cross-site page')[:100]}) "
                             "is refused; send it from this server's own origin, or with the X-CSRF-Token header")
        return None

    async def _with_deadline(self, scope: Scope, receive: Callable[[], Any], send: Callable[[Message], Any],
                             timeout: float) -> None:
        deadline = time.monotonic() + timeout
        complete = False

        async def timed() -> Message:
            nonlocal complete
            if complete:  # after the body: waiting for a disconnect (streamed answers) has no deadline
                message: Message = await receive()
                return message
            try:
                message = await asyncio.wait_for(receive(), max(0.0, deadline - time.monotonic()))
            except asyncio.TimeoutError:
                raise RequestTimeoutError(f"the request body did not arrive within {timeout:g} s") from None
            if message["type"] != "http.request" or not message.get("more_body", False):
                complete = True
            return message

        await run_refusing_mid_body(self.app, scope, timed, send, RequestTimeoutError)


def _headers(scope: Scope) -> dict[bytes, str]:
    out: dict[bytes, str] = {}
    for name, value in scope.get("headers", []):
        out.setdefault(bytes(name).lower(), bytes(value).decode("latin-1"))
    return out


def _cross_origin(headers: dict[bytes, str], host: str) -> bool:
    """Whether a browser says this request comes from a page of another origin than ``host``."""
    origin = headers.get(b"origin")
    if origin is not None:
        parts = urlsplit(origin.strip())
        if parts.scheme not in ("http", "https") or not parts.netloc:  # "null": a sandboxed or file:// page
            return True
        return _authority(parts.netloc) != _authority(host)
    return headers.get(b"sec-fetch-site", "").strip().lower() in _CROSS_SITE
