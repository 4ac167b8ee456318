"""A load client that costs the machine almost nothing: one thread, raw sockets, pre-encoded requests.

``serve-load`` runs its clients on the same cores as the server it measures.
A thread per client with its own ``httpx.Client`` spends about as much CPU
per request as the server's HTTP layer (request building, h11 parsing, JSON
decoding, and 24-32 threads taking turns at the GIL), so the latencies it
measured were partly its own. This client instead keeps N kept-alive
connections in one thread: a request is written as prepared bytes, the
answer is read until its ``Content-Length`` is in, and a selector waits on
all connections at once. A request's time runs from its write to the last
byte of its answer.
"""

from __future__ import annotations

import json
import selectors
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


def encode(method: str, path: str, port: int, key: str, body: dict[str, Any] | None = None) -> bytes:
    """An HTTP/1.1 request as bytes (kept alive; JSON body if given)."""
    payload = json.dumps(body).encode("utf-8") if body is not None else b""
    head = (f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {key}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(payload)}\r\n\r\n")
    return head.encode("latin-1") + payload


@dataclass
class Answer:
    """One exchange: status (0: the connection failed), body, and milliseconds from write to last byte."""

    status: int
    body: bytes
    ms: float

    def json(self) -> Any:
        return json.loads(self.body)


class Conn:
    """One kept-alive connection and the answer it is reading."""

    def __init__(self, port: int, tag: Any) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.tag = tag
        self.buffer = b""
        self.began = 0.0

    def send(self, request: bytes) -> None:
        self.buffer = b""
        self.began = time.perf_counter()
        self.sock.sendall(request)

    def read(self) -> Answer | None:
        """Read what is there; the answer once it is complete (``None``: not yet)."""
        chunk = self.sock.recv(65536)
        if not chunk:
            return Answer(0, b"connection closed", (time.perf_counter() - self.began) * 1000)
        self.buffer += chunk
        head, sep, body = self.buffer.partition(b"\r\n\r\n")
        if not sep:
            return None
        length = 0
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        if len(body) < length:
            return None
        status = int(head.split(b" ", 2)[1])
        return Answer(status, body[:length], (time.perf_counter() - self.began) * 1000)

    def close(self) -> None:
        self.sock.close()


def connect(port: int, count: int, warm: bytes | None = None) -> list[Conn]:
    """``count`` connections, each having exchanged ``warm`` once (so the server has accepted them)."""
    conns = [Conn(port, n) for n in range(count)]
    if warm is not None:
        run(conns, lambda conn, answer: None, first=lambda conn: warm)
    return conns


def run(conns: list[Conn], answered: Callable[[Conn, Answer], bytes | None],
        first: Callable[[Conn], bytes | None]) -> None:
    """Send ``first(conn)`` on every connection at once; each answer goes to ``answered``, which returns the
    connection's next request (``None``: this connection is done). Returns when every connection is done."""
    selector = selectors.DefaultSelector()
    busy = 0
    for conn in conns:
        request = first(conn)
        if request is not None:
            conn.send(request)
            selector.register(conn.sock, selectors.EVENT_READ, conn)
            busy += 1
    while busy:
        for key, _ in selector.select():
            conn = key.data
            try:
                answer = conn.read()
            except OSError as exc:
                answer = Answer(0, type(exc).__name__.encode(), (time.perf_counter() - conn.began) * 1000)
            if answer is None:
                continue
            following = answered(conn, answer)
            if following is not None and answer.status != 0:  # a failed connection cannot go on
                try:
                    conn.send(following)
                    continue
                except OSError as exc:  # the server closed it after its answer
                    answered(conn, Answer(0, type(exc).__name__.encode(), 0.0))
            selector.unregister(conn.sock)
            busy -= 1
    selector.close()
