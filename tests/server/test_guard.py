"""The server against a hostile web page and hostile clients: Host allow-list (DNS rebinding), cross-origin
writes in every content type, body timeouts, throttled key guessing, /metrics behind a key, offline docs,
readiness, history that names only the caller's units, and adds served while every search slot is taken.
Real servers on loopback, real clients."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import httpx
import numpy as np
import pytest

from omnimem import Memory
from omnimem.embed.base import Vectors
from omnimem.embed.fake import FakeEmbedder
from tests.server.conftest import Served, png, start, stop
from tests.serving import LiveServer

MCP_INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
MCP_HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


@pytest.fixture
def open_server(tmp_path: Path) -> Iterator[LiveServer]:
    """``--no-auth`` on loopback: every request is a store-wide admin, so only the guard stands in the way."""
    memory = Memory(tmp_path / "store", embedder="fake")
    live = LiveServer(memory, auth=False, rate_limit=None)
    yield live
    live.stop()
    memory.close()


def _error(response: httpx.Response, status: int, code: str) -> None:
    assert response.status_code == status, response.text
    assert response.json()["error"] == code


def test_no_auth_answers_no_foreign_host_dns_rebinding(open_server: LiveServer) -> None:
    kept = open_server.memory.add("a note that must survive", user_id="alice").id
    port = open_server.url.rsplit(":", 1)[1]
    rebound = httpx.Client(base_url=open_server.url, headers={"host": f"attacker.example:{port}"})
    _error(rebound.get("/v1/export", params={"all": True}), 403, "HostNotAllowedError")
    _error(rebound.post("/v1/forget", json={"all": True}), 403, "HostNotAllowedError")
    _error(rebound.post("/mcp/", json=MCP_INIT, headers=MCP_HEADERS), 403, "HostNotAllowedError")
    _error(rebound.get("/"), 403, "HostNotAllowedError")  # the console
    assert "--allowed-host attacker.example" in rebound.get("/v1/units").json()["message"]
    assert open_server.memory.get(kept).id == kept
    for host in (f"127.0.0.1:{port}", f"localhost:{port}", f"LOCALHOST.:{port}"):
        assert httpx.get(f"{open_server.url}/v1/units", headers={"host": host}).status_code == 200


def test_allowed_host_adds_a_name_and_star_needs_keys(tmp_path: Path) -> None:
    from omnimem.errors import ConfigError
    from omnimem.server import create_app

    with Memory(embedder="fake") as memory:
        live = LiveServer(memory, auth=False, rate_limit=None, allowed_hosts=["memory.lan"])
        try:
            assert httpx.get(f"{live.url}/healthz", headers={"host": "memory.lan:8420"}).status_code == 200
            assert httpx.get(f"{live.url}/healthz", headers={"host": "other.lan"}).status_code == 403
        finally:
            live.stop()
        with pytest.raises(ConfigError, match="--no-auth"):
            create_app(memory, auth=False, allowed_hosts=["*"])


@pytest.mark.parametrize("origin", ["http://localhost:9999", "http://attacker.example", "null"])
def test_cross_origin_writes_are_refused_in_every_content_type(open_server: LiveServer, origin: str) -> None:
    page = httpx.Client(base_url=open_server.url, headers={"origin": origin})
    _error(page.post("/v1/images", files={"file": ("x.png", png(1))}), 403, "CsrfError")  # a no-cors form post
    _error(page.post("/v1/units", content=b'{"text": "planted"}', headers={"content-type": "text/plain"}),
           403, "CsrfError")
    _error(page.post("/v1/forget", json={"all": True}), 403, "CsrfError")
    _error(page.post("/mcp/", json=MCP_INIT, headers=MCP_HEADERS), 403, "CsrfError")
    assert open_server.memory.count_units() == 0
    assert page.get("/v1/units").status_code == 200  # reads are not state changes (CORS keeps their answers)


def test_fetch_metadata_alone_marks_a_cross_site_write(open_server: LiveServer) -> None:
    _error(httpx.post(f"{open_server.url}/v1/units", json={"text": "x"}, headers={"sec-fetch-site": "cross-site"}),
           403, "CsrfError")
    same = httpx.post(f"{open_server.url}/v1/units", json={"text": "from the console"},
                      headers={"origin": open_server.url, "sec-fetch-site": "same-origin"})
    assert same.status_code == 201, same.text
    with_token = httpx.post(f"{open_server.url}/v1/units", json={"text": "a preflighted client"},
                            headers={"origin": "http://elsewhere.example", "x-csrf-token": "t"})
    assert with_token.status_code == 201  # a page cannot send this header cross-origin without CORS


def test_a_body_that_never_finishes_is_closed_after_the_timeout(tmp_path: Path) -> None:
    with Memory(embedder="fake") as memory:
        live = LiveServer(memory, auth=False, rate_limit=None, body_timeout=1.0)
        try:
            host, port = live.url.removeprefix("http://").split(":")
            with socket.create_connection((host, int(port)), timeout=10) as sock:
                sock.sendall(b"POST /v1/units HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                             b"Content-Length: 1000\r\n\r\n{\"text\": ")
                started = time.monotonic()
                answer = b""
                while chunk := sock.recv(65536):  # until the server closes the connection
                    answer += chunk
                waited = time.monotonic() - started
            assert answer.startswith(b"HTTP/1.1 408") and b"RequestTimeoutError" in answer
            assert waited < 8
            assert httpx.post(f"{live.url}/v1/units", json={"text": "a whole body"}).status_code == 201
        finally:
            live.stop()


def test_failed_authentications_are_throttled_per_address(served: Served) -> None:
    guesser = httpx.Client(base_url=served.url, headers={"authorization": "Bearer omk_guess_wrong"})
    statuses = [guesser.get("/v1/units").status_code for _ in range(25)]
    assert statuses[:20] == [401] * 20 and statuses[-1] == 429
    assert guesser.get("/v1/units").headers["retry-after"]
    _error(served.client("alice").get("/v1/units"), 429, "RateLimitError")  # the same address, while it lasts
    login = httpx.post(f"{served.url}/v1/session", json={"api_key": served.keys["alice"]})
    _error(login, 429, "RateLimitError")


def test_metrics_need_an_admin_key_unless_public(tmp_path: Path) -> None:
    served = start(tmp_path)
    try:
        _error(httpx.get(f"{served.url}/metrics"), 401, "AuthError")
        _error(served.client("alice").get("/metrics"), 403, "ForbiddenError")
        assert served.client("root").get("/metrics").status_code == 200
    finally:
        stop(served)
    public = start(tmp_path / "public", public_metrics=True)
    try:
        assert httpx.get(f"{public.url}/metrics").status_code == 200
    finally:
        stop(public)


def test_docs_load_nothing_from_another_host(served: Served) -> None:
    for page, script in (("/docs", "swagger-ui-bundle.js"), ("/redoc", "redoc.standalone.js")):
        response = httpx.get(f"{served.url}{page}")
        assert response.status_code == 200
        assert "https://" not in response.text and "//cdn" not in response.text
        csp = response.headers["content-security-policy"]
        assert "script-src 'self'" in csp and "default-src 'none'" in csp and "frame-ancestors 'none'" in csp
        asset = httpx.get(f"{served.url}/docs-assets/{script}")
        assert asset.status_code == 200 and len(asset.content) > 100_000


class SlowToLoad(FakeEmbedder):
    """The fake embedder whose first call waits for ``loaded`` (a model that takes seconds to load)."""

    def __init__(self) -> None:
        super().__init__()
        self.loaded = threading.Event()

    def embed(self, texts: Sequence[str]) -> Vectors:
        self.loaded.wait(30)
        return np.asarray(super().embed(texts))


def test_ready_only_once_the_embedder_is_loaded(tmp_path: Path) -> None:
    embedder = SlowToLoad()
    with Memory(embedder=embedder) as memory:
        live = LiveServer(memory, auth=False, rate_limit=None)
        try:
            assert httpx.get(f"{live.url}/healthz").status_code == 200
            waiting = httpx.get(f"{live.url}/readyz")
            assert waiting.status_code == 503 and waiting.json()["status"] == "starting"
            embedder.loaded.set()
            deadline = time.monotonic() + 10
            while httpx.get(f"{live.url}/readyz").status_code != 200:
                assert time.monotonic() < deadline, "never ready"
                time.sleep(0.02)
            assert httpx.get(f"{live.url}/readyz").json() == {"status": "ready"}
        finally:
            embedder.loaded.set()
            live.stop()


def test_history_after_a_store_wide_forget_by_session_names_only_the_callers_units(served: Served) -> None:
    alice_id = served.client("alice").post("/v1/units", json={"text": "alice in s1", "session_id": "s1"}).json()["id"]
    bob_id = served.client("bob").post("/v1/units", json={"text": "bob in s1", "session_id": "s1"}).json()["id"]
    forgot = served.client("root").post("/v1/forget", json={"session_id": "s1", "all_users": True})
    assert forgot.json() == {"forgotten": 2}
    events = served.client("bob").get(f"/v1/units/{bob_id}/history").json()["events"]
    assert [e["action"] for e in events] == ["add", "forget"]
    assert all(e["unit_ids"] == [bob_id] for e in events)
    whole = served.client("root").get(f"/v1/units/{bob_id}/history").json()["events"]
    assert set(whole[-1]["unit_ids"]) == {alice_id, bob_id}  # a store-wide admin sees the event whole


class HeldQueries(FakeEmbedder):
    """The fake embedder, except that embedding a text containing "held" waits for ``release``."""

    def __init__(self) -> None:
        super().__init__()
        self.release = threading.Event()
        self.holding = threading.Semaphore(0)  # one release per text that started waiting

    def embed(self, texts: Sequence[str]) -> Vectors:
        if any("held" in t for t in texts):
            self.holding.release()
            self.release.wait(30)
        return np.asarray(super().embed(texts))


class HeldSearches:
    """A Memory's searches for a text containing "held" wait for ``release`` in their packing, inside their
    search slot; ``ranked`` counts the rankings begun (each inside a slot on a server)."""

    def __init__(self, memory: Memory) -> None:
        self.release = threading.Event()
        self.holding = threading.Semaphore(0)  # one release per search that started waiting
        self.ranked = threading.Semaphore(0)
        retriever = memory.engine.retriever  # type: ignore[attr-defined]
        pack, rank = retriever.pack, retriever.rank

        def held_pack(text: str, *args: object, **kwargs: object) -> object:
            if "held" in text:
                self.holding.release()
                self.release.wait(30)
            return pack(text, *args, **kwargs)

        def counted_rank(text: str, *args: object, **kwargs: object) -> object:
            self.ranked.release()
            return rank(text, *args, **kwargs)

        retriever.pack, retriever.rank = held_pack, counted_rank


def test_adds_are_served_while_every_search_slot_is_taken(tmp_path: Path) -> None:
    """``search_concurrency=1``: one search runs, the next waits its turn, and an add goes through meanwhile."""
    with Memory(tmp_path / "store", embedder="fake") as memory:
        held = HeldSearches(memory)
        live = LiveServer(memory, auth=False, rate_limit=None, search_concurrency=1)
        answers: dict[str, int] = {}

        def search(name: str) -> None:
            answers[name] = httpx.post(f"{live.url}/v1/search", json={"query": f"held {name}"}, timeout=30).status_code

        try:
            first = threading.Thread(target=search, args=("first",))
            first.start()
            assert held.holding.acquire(timeout=10)  # the first search holds the only slot, inside its packing
            assert held.ranked.acquire(timeout=0)
            second = threading.Thread(target=search, args=("second",))
            second.start()
            added = httpx.post(f"{live.url}/v1/units", json={"text": "a note written while searches wait"}, timeout=10)
            assert added.status_code == 201 and added.json()["accepted"]
            assert not held.ranked.acquire(timeout=0.5)  # the second has not started ranking: it waits for the slot
            assert answers == {}
            held.release.set()
            first.join(10)
            second.join(10)
            assert answers == {"first": 200, "second": 200}
        finally:
            held.release.set()
            live.stop()


def test_a_search_waiting_for_its_query_embedding_holds_no_slot(tmp_path: Path) -> None:
    """``search_concurrency=1``: while one search waits for the model to embed its query, another is answered."""
    embedder = HeldQueries()
    with Memory(tmp_path / "store", embedder=embedder) as memory:
        memory.add("Carol keeps bees on her roof.")
        live = LiveServer(memory, auth=False, rate_limit=None, search_concurrency=1)
        waiting: dict[str, int] = {}

        def search() -> None:
            waiting["held"] = httpx.post(f"{live.url}/v1/search", json={"query": "held bees"}, timeout=30).status_code

        try:
            first = threading.Thread(target=search)
            first.start()
            assert embedder.holding.acquire(timeout=10)  # its query is being embedded
            other = httpx.post(f"{live.url}/v1/search", json={"query": "bees"}, timeout=10)
            assert other.status_code == 200
            assert [hit["text"] for hit in other.json()["hits"]] == ["Carol keeps bees on her roof."]
            assert waiting == {}  # still waiting for the model
            embedder.release.set()
            first.join(10)
            assert waiting == {"held": 200}
        finally:
            embedder.release.set()
            live.stop()
