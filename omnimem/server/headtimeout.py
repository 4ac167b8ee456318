"""A deadline for the request head: uvicorn's h11 protocol, closing connections whose headers dawdle.

uvicorn (0.54) bounds the idle time between kept-alive requests
(``timeout_keep_alive``), but once a request's first byte has arrived it
waits for the rest of the head for ever: a client that opens connections and
sends a header line a byte at a time holds each of them (and its slot)
indefinitely ("slowloris"). The guard's body timeout
(:mod:`omnimem.server.guard`) starts only when the head is complete, since
the app sees nothing before.

:class:`HeadTimeoutProtocol` is uvicorn's :class:`H11Protocol` with one
timer: armed when a connection opens and when the first byte of each next
request arrives, cancelled when h11 has parsed the whole head. If it fires,
the answer is ``408`` with the API's error body (``RequestTimeoutError``)
and the connection is closed. ``omnimem serve --header-timeout SECONDS``
names the class to uvicorn by its import path (its worker processes import
it too) and passes the bound in ``OMNIMEM_HEADER_TIMEOUT``; an in-process
uvicorn can take a subclass that sets :attr:`HeadTimeoutProtocol.head_timeout`.
"""

from __future__ import annotations

import asyncio
import json
import os
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from omnimem.errors import RequestTimeoutError

DEFAULT_HEADER_TIMEOUT = 10.0
ENV_TIMEOUT = "OMNIMEM_HEADER_TIMEOUT"  # read by the class in each worker process (see serve.py)


class HeadTimeoutProtocol(H11Protocol):
    """:class:`H11Protocol` that closes a connection whose request head takes over ``head_timeout`` seconds."""

    head_timeout: float | None = None  # None: OMNIMEM_HEADER_TIMEOUT, else DEFAULT_HEADER_TIMEOUT

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.head_timeout is None:
            self.head_timeout = float(os.environ.get(ENV_TIMEOUT, DEFAULT_HEADER_TIMEOUT))
        self._head_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def data_received(self, data: bytes) -> None:
        if self.conn.their_state is h11.IDLE:  # the first bytes of a request (or more of its head)
            self._arm()
        super().data_received(data)
        self._check_head()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._check_head()  # a pipelined request's partial head may be buffered already
        if self.conn.their_state is h11.IDLE and self.conn.trailing_data[0]:
            self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _arm(self) -> None:
        if self._head_timer is None and self.head_timeout and not self.transport.is_closing():
            self._head_timer = self.loop.call_later(self.head_timeout, self._head_too_slow)

    def _disarm(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _check_head(self) -> None:
        if self.conn.their_state is not h11.IDLE:  # h11 has the whole head: the app (and its body timeout) has it
            self._disarm()

    def _head_too_slow(self) -> None:
        self._head_timer = None
        if self.transport.is_closing() or self.conn.their_state is not h11.IDLE:
            return
        error = RequestTimeoutError(f"the request head did not arrive within {self.head_timeout or 0:g} s")
        body = json.dumps({"error": error.code, "message": str(error)}).encode("utf-8")
        # h11 cannot answer a request it has not parsed: the bytes are written as they are, then the close
        self.transport.write(b"HTTP/1.1 408 Request Timeout\r\ncontent-type: application/json\r\n"
                             b"content-length: " + str(len(body)).encode() + b"\r\nconnection: close\r\n\r\n" + body)
        self.transport.close()
