"""Request limits: a per-key token bucket (429 + ``Retry-After``), a per-address bucket of failed
authentications (for the API and, through :class:`ThrottledAuth`, the MCP server), and a request body
limit (413).

The body limit is a pure ASGI middleware: it refuses a declared
``Content-Length`` over the limit before reading anything and counts the
bytes of bodies that do not declare one, so an oversize upload is never
read whole, let alone stored.
"""

from __future__ import annotations

import asyncio
import json
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from omnimem.errors import ConfigError, OmnimemError, PayloadTooLargeError, RateLimitError

Scope = dict[str, Any]
Message = dict[str, Any]
ASGIApp = Callable[..., Any]


@dataclass(frozen=True, slots=True)
class RateLimit:
    """``rate`` requests per second per key, with bursts up to ``burst``."""

    rate: float = 50.0
    burst: int = 100

    def __post_init__(self) -> None:
        if not self.rate > 0 or self.burst < 1:
            raise ConfigError("a rate limit needs rate > 0 and burst >= 1")


class RateLimiter:
    """Token buckets, one per key, refilled continuously; thread-safe (routes run on a thread pool).

    Buckets that have refilled completely are forgotten once there are more than
    ``max_keys`` (a full bucket and no bucket are the same thing), so logins from
    many addresses cannot grow the table without bound.
    """

    def __init__(self, limit: RateLimit, clock: Callable[[], float] = time.monotonic, max_keys: int = 10_000) -> None:
        self.max_keys = max_keys
        self.limit = limit
        self._clock = clock
        self._buckets: dict[str, tuple[float, float]] = {}  # key -> (tokens, last refill)
        self._lock = threading.Lock()

    def take(self, key: str) -> None:
        """Spend one token of ``key``'s bucket, or raise RateLimitError saying when one is back."""
        now = self._clock()
        with self._lock:
            tokens, last = self._buckets.get(key, (float(self.limit.burst), now))
            tokens = min(float(self.limit.burst), tokens + (now - last) * self.limit.rate)
            if tokens < 1.0:
                self._buckets[key] = (tokens, now)
                wait = (1.0 - tokens) / self.limit.rate
                raise RateLimitError(f"rate limit of {self.limit.rate:g} requests/s exceeded; retry in {wait:.2f} s",
                                     retry_after=wait)
            self._buckets[key] = (tokens - 1.0, now)
            if len(self._buckets) > self.max_keys:
                self._prune(now)

    def wait(self, key: str) -> float:
        """Seconds until ``key``'s bucket holds a whole token again (0: one is there now); spends nothing."""
        now = self._clock()
        with self._lock:
            tokens, last = self._buckets.get(key, (float(self.limit.burst), now))
        tokens = min(float(self.limit.burst), tokens + (now - last) * self.limit.rate)
        return 0.0 if tokens >= 1.0 else (1.0 - tokens) / self.limit.rate

    def _prune(self, now: float) -> None:
        full = [k for k, (tokens, last) in self._buckets.items()
                if tokens + (now - last) * self.limit.rate >= self.limit.burst]
        for key in full:
            del self._buckets[key]

    def __len__(self) -> int:
        return len(self._buckets)


DEFAULT_AUTH_FAILURES = RateLimit(rate=0.5, burst=20)


class FailureThrottle:
    """Failed authentications per client address: ``burst`` of them, then ``rate`` per second.

    While an address has none left, its requests are refused (429) before
    their credentials are looked at, so guessing keys (or flooding the key
    lookup) from one address is slowed to ``rate`` tries per second. The
    address is the TCP peer, or what a trusted proxy says
    (``--forwarded-allow-ips``), never a client's own ``X-Forwarded-For``.
    """

    def __init__(self, limit: RateLimit, clock: Callable[[], float] = time.monotonic) -> None:
        self._buckets = RateLimiter(limit, clock)

    def check(self, address: str) -> None:
        wait = self._buckets.wait(address)
        if wait > 0:
            raise RateLimitError(f"too many failed authentications from {address}; retry in {wait:.1f} s",
                                 retry_after=wait)

    def failed(self, address: str) -> None:
        try:
            self._buckets.take(address)
        except RateLimitError:  # already empty: check() refuses the next one
            pass


REFUSED_BODY_READ = 64 * 1024  # bytes of a refused request's body read before its 401 (an MCP message is far smaller)
REFUSED_BODY_WAIT = 2.0  # seconds a refused request's body is waited for, at most, before the refusal goes out


async def drain(reading: Callable[[], Any], done: Callable[[], bool]) -> None:
    """Read what is left of a refused request's body (at most ``REFUSED_BODY_READ`` bytes, ``REFUSED_BODY_WAIT``
    seconds) before the refusal is sent: a server that closes a connection with bytes unread resets it, and the
    client may then read the reset instead of the 401 or 429. ``done`` says when the body has been read whole."""
    drained = 0
    deadline = time.monotonic() + REFUSED_BODY_WAIT
    while not done() and drained <= REFUSED_BODY_READ:
        try:
            message = await asyncio.wait_for(reading(), max(0.0, deadline - time.monotonic()))
        except asyncio.TimeoutError:  # a client that never sends its body gets the refusal anyway
            return
        drained += len(message.get("body", b""))


class ThrottledAuth:
    """ASGI wrapper that puts :class:`FailureThrottle` in front of an app checking its own credentials.

    The MCP server at ``/mcp`` verifies bearer keys itself (its transport
    answers 401); this wrapper counts each 401 it sends against the client's
    address and refuses that address with 429 while its failures are used up,
    before the app sees the request. Either refusal goes out after the
    request's body has been read (:func:`drain`), so the client reads it
    rather than a reset. The throttle is the HTTP API's own
    instance, so guesses on ``/v1`` and ``/mcp`` share one budget.
    """

    def __init__(self, app: ASGIApp, throttle: FailureThrottle) -> None:
        self.app = app
        self.throttle = throttle

    async def __call__(self, scope: Scope, receive: Callable[[], Any], send: Callable[[Message], Any]) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        client = scope.get("client")
        address = str(client[0]) if client else "?"  # as auth.client_address: the peer, or a trusted proxy's word
        read_whole = False  # the request's body has been read to its end (or the client went away)

        async def reading() -> Message:
            nonlocal read_whole
            message: Message = await receive()
            read_whole = message["type"] != "http.request" or not message.get("more_body", False)
            return message

        try:
            self.throttle.check(address)
        except RateLimitError as exc:  # refused before the app reads anything: the body is read first (as below)
            await drain(reading, lambda: read_whole)
            await answer_error(send, exc, [(b"retry-after", retry_after_header(exc).encode())])
            return

        async def noting(message: Message) -> None:
            if message["type"] == "http.response.start" and message.get("status") == 401:
                self.throttle.failed(address)
                await drain(reading, lambda: read_whole)  # the app may answer before it read the body
            await send(message)

        await self.app(scope, reading, noting)


def retry_after_header(exc: RateLimitError) -> str:
    """Whole seconds, at least 1 (the header takes integers)."""
    return str(max(1, math.ceil(exc.retry_after)))


class BodyLimit:
    """Refuse request bodies over ``limit_for(path)`` bytes with a 413 error body."""

    def __init__(self, app: ASGIApp, limit_for: Callable[[str], int]) -> None:
        self.app = app
        self.limit_for = limit_for

    async def __call__(self, scope: Scope, receive: Callable[[], Any], send: Callable[[Message], Any]) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self.limit_for(str(scope.get("path", "")))
        declared = _content_length(scope)
        if declared is not None and declared > limit:
            await answer_error(send, PayloadTooLargeError(f"request body larger than {limit} bytes"))
            return
        seen = 0

        async def counted() -> Message:
            nonlocal seen
            message: Message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > limit:
                    raise PayloadTooLargeError(f"request body larger than {limit} bytes")
            return message

        await run_refusing_mid_body(self.app, scope, counted, send, PayloadTooLargeError)


def _content_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", []):
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


async def answer_error(send: Callable[[Message], Any], error: OmnimemError,
                       headers: list[tuple[bytes, bytes]] | None = None) -> None:
    """Answer with ``error``'s status and JSON body and close the connection (a middleware's refusal)."""
    body = json.dumps({"error": error.code, "message": str(error)}).encode("utf-8")
    await send({"type": "http.response.start", "status": error.status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                            (b"connection", b"close"), *(headers or [])]})
    await send({"type": "http.response.body", "body": body})


async def run_refusing_mid_body(app: ASGIApp, scope: Scope, receive: Callable[[], Any],
                                send: Callable[[Message], Any], refused: type[OmnimemError]) -> None:
    """Run ``app`` with a ``receive`` that may raise ``refused`` while the body arrives; once it has, nothing
    the app sends goes out (whatever it answers to a body it could not read), and the refusal is the answer."""
    tripped: list[OmnimemError] = []

    async def checked() -> Message:
        try:
            message: Message = await receive()
        except refused as exc:
            tripped.append(exc)
            raise
        return message

    async def guarded(message: Message) -> None:
        if not tripped:
            await send(message)

    try:
        await app(scope, checked, guarded)
    except refused:
        if not tripped:
            raise
    if tripped:
        await answer_error(send, tripped[0])
