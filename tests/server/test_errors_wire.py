"""Every OmnimemError subclass crosses the wire as itself: status, body, and the class the client raises."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

import omnimem.results.entities  # noqa: F401  (error classes defined outside omnimem.errors)
import omnimem.llm.errors  # noqa: F401
import omnimem.media.errors  # noqa: F401
from omnimem import Memory
from omnimem.errors import OmnimemError, RateLimitError, all_error_classes, error_class
from omnimem.remote.transport import Transport
from tests.serving import LiveServer

CLASSES = all_error_classes()


@pytest.fixture(scope="module")
def boom() -> Iterator[tuple[LiveServer, Transport]]:
    """A server with one extra route that raises the error class named in its path."""
    memory = Memory(embedder="fake")
    live = LiveServer(memory, auth=False, rate_limit=None)

    @live.app.get("/boom/{code}")
    def raise_it(code: str) -> None:
        if code == "unexpected":
            raise RuntimeError("secret internals /etc/omnimem")
        cls = error_class(code)
        raise cls("boom", retry_after=7.0) if issubclass(cls, RateLimitError) else cls("boom")

    transport = Transport(live.url, None, timeout=10, retries=0, backoff=0)
    yield live, transport
    transport.close()
    live.stop()
    memory.close()


def test_the_table_covers_every_class() -> None:
    names = {cls.__name__ for cls in CLASSES}
    assert {"AuthError", "ForbiddenError", "ScopeError", "CsrfError", "RateLimitError", "PayloadTooLargeError",
            "NotFoundError", "InvalidInputError", "LLMError", "MediaTooLargeError", "RemoteError"} <= names
    assert len(names) == len(CLASSES)  # codes are class names: they must be unique


@pytest.mark.parametrize("cls", CLASSES, ids=[c.__name__ for c in CLASSES])
def test_every_error_round_trips(boom: tuple[LiveServer, Transport], cls: type[OmnimemError]) -> None:
    live, transport = boom
    raw = httpx.get(f"{live.url}/boom/{cls.__name__}")
    assert raw.status_code == cls.status
    assert raw.json() == {"error": cls.__name__, "message": "boom"}
    with pytest.raises(cls) as raised:
        transport.call("GET", f"/boom/{cls.__name__}", idempotent=True)
    assert type(raised.value) is cls and str(raised.value) == "boom"
    if cls is RateLimitError:
        assert raw.headers["retry-after"] == "7" and raised.value.retry_after == 7.0  # type: ignore[attr-defined]


def test_an_unexpected_failure_is_a_500_that_names_no_internals(boom: tuple[LiveServer, Transport]) -> None:
    live, transport = boom
    raw = httpx.get(f"{live.url}/boom/unexpected")
    assert raw.status_code == 500 and raw.json() == {"error": "OmnimemError", "message": "internal server error"}
    with pytest.raises(OmnimemError, match="internal server error"):
        transport.call("GET", "/boom/unexpected", idempotent=True)


def test_unknown_routes_and_methods_have_error_bodies(boom: tuple[LiveServer, Transport]) -> None:
    live, _ = boom
    assert httpx.get(f"{live.url}/v1/nothing-here").json()["error"] == "NotFoundError"
    wrong = httpx.put(f"{live.url}/v1/search")
    assert wrong.status_code == 405 and wrong.json()["error"] == "InvalidInputError"


def test_a_server_that_is_not_there_is_a_remote_error() -> None:
    import socket

    from omnimem.errors import RemoteError

    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with Memory(url=f"http://127.0.0.1:{port}", retries=1, backoff=0.01) as remote, pytest.raises(RemoteError):
        remote.search("anything")
