"""Error answers over a kept-alive connection, read off a raw socket.

Every error answer either leaves the connection usable (the next request on
the same socket is answered) or says ``Connection: close`` and then closes
it. A 500 used to go out without that header before the socket was closed,
so a client's next request on the connection met a reset. The internal error
here is real: an embedder registered for the test that fails on one word.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import uvicorn

from omnimem import Memory
from omnimem.embed import FakeEmbedder, register_embedder
from omnimem.server import create_app
from omnimem.store.apikeys import create_key
from omnimem.server.headtimeout import HeadTimeoutProtocol

FAILING_WORD = "kaboom"


class FailingEmbedder(FakeEmbedder):
    """The fake embedder, except that a text with the word ``kaboom`` makes it fail as a broken model would."""

    name = "fake-failing"

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if any(FAILING_WORD in text for text in texts):
            raise RuntimeError("the model crashed")
        return super().embed(texts)


@dataclass
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)

    @property
    def closes(self) -> bool:
        return "close" in self.headers.get("connection", "").lower()


class Connection:
    """One kept-alive HTTP/1.1 connection: requests go out one after another on the same socket."""

    def __init__(self, port: int, key: str | None) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.key = key
        self.buffer = b""

    def request(self, method: str, path: str, body: Any = None, *, raw: bytes | None = None,
                headers: dict[str, str] | None = None) -> Answer:
        data = raw if raw is not None else (b"" if body is None else json.dumps(body).encode())
        head = {"Host": "127.0.0.1", "Content-Type": "application/json", "Content-Length": str(len(data)),
                **({"Authorization": f"Bearer {self.key}"} if self.key else {}), **(headers or {})}
        lines = "".join(f"{name}: {value}\r\n" for name, value in head.items())
        self.sock.sendall(f"{method} {path} HTTP/1.1\r\n{lines}\r\n".encode() + data)
        return self._answer()

    def _answer(self) -> Answer:
        while b"\r\n\r\n" not in self.buffer:
            self._fill()
        head, _, self.buffer = self.buffer.partition(b"\r\n\r\n")
        status_line, *fields = head.decode("latin-1").split("\r\n")
        headers = {name.strip().lower(): value.strip() for name, value in (f.split(":", 1) for f in fields)}
        length = int(headers["content-length"])  # every answer of the API says its length
        while len(self.buffer) < length:
            self._fill()
        body, self.buffer = self.buffer[:length], self.buffer[length:]
        return Answer(int(status_line.split()[1]), headers, body)

    def _fill(self) -> None:
        chunk = self.sock.recv(65536)
        if not chunk:
            raise ConnectionError("the server closed the connection")
        self.buffer += chunk

    def at_end(self) -> bool:
        """Whether the server has closed its side (nothing more to read)."""
        try:
            return self.buffer == b"" and self.sock.recv(1) == b""
        except ConnectionResetError:
            return True

    def close(self) -> None:
        self.sock.close()


class Served:
    """``create_app`` under uvicorn in a thread on a free loopback port, with the given HTTP protocol class."""

    def __init__(self, memory: Memory, http: Any, **options: Any) -> None:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.bind(("127.0.0.1", 0))
        self.sock, self.port = sock, sock.getsockname()[1]
        config = uvicorn.Config(create_app(memory, rate_limit=None, **options), log_level="critical",
                                lifespan="on", http=http, timeout_graceful_shutdown=2)
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [sock]}, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            assert time.monotonic() < deadline and self.thread.is_alive(), "the test server did not start"
            time.sleep(0.01)

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)
        self.sock.close()


@dataclass
class Setup:
    served: Served
    memory: Memory
    keys: dict[str, str]

    def connect(self, who: str | None = "alice") -> Connection:
        return Connection(self.served.port, self.keys[who] if who else None)


@pytest.fixture(scope="module", params=["h11", "omnimem-serve"])
def setup(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setup]:
    """uvicorn's h11 protocol, and the one ``omnimem serve`` runs (with its request-head deadline)."""
    register_embedder("fake-failing", FailingEmbedder, replace=True)
    folder: Path = tmp_path_factory.mktemp("error-connection")
    memory = Memory(folder / "store", embedder="fake-failing")
    keys = {"alice": create_key(memory.store, name="alice", role="write", user_id="alice")[0],
            "alice-reader": create_key(memory.store, name="alice-reader", role="read", user_id="alice")[0]}
    memory.add("Alice keeps her bicycle in the shed", user_id="alice")
    http = "h11" if request.param == "h11" else HeadTimeoutProtocol
    served = Served(memory, http, max_body=4096)
    yield Setup(served, memory, keys)
    served.stop()
    memory.close()


def fine(connection: Connection) -> None:
    """The connection still answers: a search on it is a 200 with the shed note."""
    answer = connection.request("POST", "/v1/search", {"query": "where is the bicycle", "user_id": "alice"})
    assert answer.status == 200 and "shed" in answer.json()["hits"][0]["text"]


def test_after_an_internal_error_the_connection_answers_the_next_request(setup: Setup) -> None:
    connection = setup.connect()
    try:
        fine(connection)
        failed = connection.request("POST", "/v1/search", {"query": f"the {FAILING_WORD} question", "user_id": "alice"})
        assert failed.status == 500 and failed.json() == {"error": "OmnimemError", "message": "internal server error"}
        assert not failed.closes
        fine(connection)
        before = setup.memory.count_units()
        failed_add = connection.request("POST", "/v1/units", {"text": f"a {FAILING_WORD} note", "user_id": "alice"})
        assert failed_add.status == 500 and not failed_add.closes
        added = connection.request("POST", "/v1/units", {"text": "Alice's helmet hangs by the door", "user_id": "alice"})
        assert added.status == 201 and added.json()["accepted"]
        assert setup.memory.count_units() == before + 1  # the failed add stored nothing
    finally:
        connection.close()


# (who, method, path, body or raw bytes, status, error name)
FOUR_XX: list[tuple[str | None, str, str, Any, int, str]] = [
    ("alice", "GET", "/v1/units/no-such-unit", None, 404, "NotFoundError"),
    ("alice", "POST", "/v1/units", {"text": "hi", "colour": "blue"}, 422, "InvalidInputError"),
    ("alice", "POST", "/v1/units", b'{"text": "unterminated', 422, "InvalidInputError"),
    ("alice", "POST", "/v1/search", {"query": "x", "now": "the day after never"}, 400, "InvalidTimeError"),
    (None, "POST", "/v1/search", {"query": "bicycle"}, 401, "AuthError"),
    ("alice-reader", "POST", "/v1/units", {"text": "a reader may not write"}, 403, "ForbiddenError"),
    ("alice", "PUT", "/v1/search", None, 405, "InvalidInputError"),
    ("alice", "POST", "/v1/units", {"text": "x" * 5000}, 413, "PayloadTooLargeError"),
]


@pytest.mark.parametrize(("who", "method", "path", "body", "status", "error"), FOUR_XX,
                         ids=[f"{case[4]}-{case[5]}" for case in FOUR_XX])
def test_after_a_4xx_the_connection_is_usable_or_said_to_close(setup: Setup, who: str | None, method: str,
                                                               path: str, body: Any, status: int, error: str) -> None:
    """The API's own refusals keep the connection; a body refused before it is read (413) closes it, and says so."""
    connection = setup.connect(who)
    try:
        raw = body if isinstance(body, bytes) else None
        answer = connection.request(method, path, None if raw is not None else body, raw=raw)
        assert (answer.status, answer.json()["error"]) == (status, error)
        assert answer.closes == (status == 413)
        if answer.closes:
            assert connection.at_end()
        else:
            probe = connection.request("GET", "/healthz")
            assert probe.status == 200 and probe.json()["status"] == "ok"
    finally:
        connection.close()


def test_malformed_json_says_where_it_stops_parsing(setup: Setup) -> None:
    connection = setup.connect()
    try:
        answer = connection.request("POST", "/v1/search", raw=b'{"query": ')
        assert answer.status == 422
        assert answer.json() == {"error": "InvalidInputError",
                                 "message": "the body is not valid JSON: Expecting value at line 1 column 11"}
        second = connection.request("POST", "/v1/units", raw=b'{\n  "text": "ok",\n  "user_id": alice\n}')
        assert second.json()["message"] == "the body is not valid JSON: Expecting value at line 3 column 14"
        fine(connection)
    finally:
        connection.close()
