"""The MCP server as `omnimem serve` mounts it: /mcp of create_app, with the store's API keys as bearer tokens."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from conftest import connect
from fastmcp.exceptions import McpError

from omnimem import Memory
from omnimem.store.apikeys import create_key
from omnimem.server.limits import RateLimit
from tests.serving import LiveServer


@pytest.fixture
def live(memory: Memory) -> Iterator[LiveServer]:
    server = LiveServer(memory, rate_limit=None)
    try:
        yield server
    finally:
        server.stop()


def test_a_store_key_works_on_the_served_mcp_endpoint_within_its_scope(live: LiveServer, memory: Memory) -> None:
    key, _ = create_key(memory.store, name="ann-agent", role="write", user_id="ann")
    bobs = memory.add("Bob keeps a canoe in the garage", user_id="bob").id
    with connect(f"{live.url}/mcp/", auth=key) as ann:
        unit = ann.call("add", text="Ann keeps a red kayak at the lake")["id"]
        assert ann.call("search", query="where is the kayak")["hits"][0]["id"] == unit
        assert ann.fail("get", unit_id=bobs)["error"] == "NotFoundError"
        assert ann.fail("forget", user_id="ann")["error"] == "ForbiddenError"
    assert memory.get(unit).user_id == "ann"
    assert memory.history(unit)[0].actor == "key:ann-agent"


def test_the_served_mcp_endpoint_refuses_missing_and_revoked_keys(live: LiveServer, memory: Memory) -> None:
    key, record = create_key(memory.store, name="temp", role="read", user_id="ann")
    hello = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
             "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
    accept = {"accept": "application/json, text/event-stream"}
    assert httpx.post(f"{live.url}/mcp/", json=hello, headers=accept).status_code == 401
    ok = httpx.post(f"{live.url}/mcp/", json=hello, headers={**accept, "authorization": f"Bearer {key}"})
    assert ok.status_code == 200
    memory.store.revoke_key(record.key_id)
    gone = httpx.post(f"{live.url}/mcp/", json=hello, headers={**accept, "authorization": f"Bearer {key}"})
    assert gone.status_code == 401
    assert gone.json()["error"] == "AuthError" and "revoked" in gone.json()["message"]  # omnimem's reason,
    assert "clear authentication tokens" not in gone.text + gone.headers["www-authenticate"]  # not OAuth advice
    missing = httpx.post(f"{live.url}/mcp/", json=hello, headers=accept)
    assert missing.json() == {"error": "AuthError", "message": "missing API key: send Authorization: Bearer <key>"}


def test_bad_keys_on_the_mcp_endpoint_are_throttled_per_address_like_the_apis(memory: Memory) -> None:
    live = LiveServer(memory, rate_limit=None, auth_failures=RateLimit(rate=0.001, burst=3))  # ~no refill in a test
    try:
        key, _ = create_key(memory.store, name="ann-agent", role="write", user_id="ann")
        with connect(f"{live.url}/mcp/", auth=key) as ann:  # a good key works, and successes cost no budget
            ann.call("add", text="Ann keeps a red kayak at the lake")
        for _ in range(3):  # a guesser with the real MCP client: each try is a 401 that counts
            with pytest.raises(McpError):
                with connect(f"{live.url}/mcp/", auth="omk_guess_wrong"):
                    pass
        hello = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                 "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                            "clientInfo": {"name": "t", "version": "1"}}}
        headers = {"accept": "application/json, text/event-stream", "authorization": f"Bearer {key}"}
        refused = httpx.post(f"{live.url}/mcp/", json=hello, headers=headers)  # even the right key, from there
        assert refused.status_code == 429 and refused.json()["error"] == "RateLimitError"
        assert int(refused.headers["retry-after"]) >= 1
        with pytest.raises(McpError):
            with connect(f"{live.url}/mcp/", auth=key):
                pass
        api = httpx.get(f"{live.url}/v1/units", headers={"authorization": f"Bearer {key}"})
        assert api.status_code == 429  # one budget per address for /v1 and /mcp
    finally:
        live.stop()
    assert memory.stats()["units"] == 1


def test_a_refused_mcp_request_is_read_whole_before_its_401_so_the_connection_survives(live: LiveServer) -> None:
    """A client that sends its headers, then its body, gets the 401 itself (not a reset) and keeps its connection."""
    import select
    import socket

    body = b'{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}'
    head = (b"POST /mcp/ HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer omk_guess_wrong\r\n"
            b"Accept: application/json, text/event-stream\r\nContent-Type: application/json\r\n"
            b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n")
    host, port = live.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(head)
        early, _, _ = select.select([sock], [], [], 0.5)
        assert not early  # no answer while the body is still on its way
        sock.sendall(body)
        answer = b""
        while b"\r\n\r\n" not in answer or not answer.rstrip().endswith(b"}"):
            answer += sock.recv(65536)
        assert answer.startswith(b"HTTP/1.1 401")
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")  # the same connection, kept alive
        assert sock.recv(65536).startswith(b"HTTP/1.1 200")


def test_a_throttled_address_gets_its_429_whole_after_its_body_is_read(memory: Memory) -> None:
    """Refused before the app reads anything, a request's body is still read first, so the client reads the 429
    and then a clean close, not a reset (with bytes unread, closing the connection resets it: the fastmcp client
    then saw "Client failed to connect" instead of the refusal, now and then)."""
    import select
    import socket

    live = LiveServer(memory, rate_limit=None, auth_failures=RateLimit(rate=0.001, burst=1))
    try:
        body = b'{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}'
        head = (b"POST /mcp/ HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer omk_guess_wrong\r\n"
                b"Accept: application/json, text/event-stream\r\nContent-Type: application/json\r\n"
                b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n")
        assert httpx.post(f"{live.url}/mcp/", content=body, headers={"authorization": "Bearer omk_guess_wrong",
                          "accept": "application/json, text/event-stream"}).status_code == 401  # the one failure
        host, port = live.url.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port)), timeout=10) as sock:
            sock.sendall(head)
            early, _, _ = select.select([sock], [], [], 0.3)
            assert not early  # the refusal waits for the body (up to REFUSED_BODY_WAIT)
            sock.sendall(body)
            answer = b""
            while chunk := sock.recv(65536):  # to the server's close: a reset would raise here
                answer += chunk
        assert answer.startswith(b"HTTP/1.1 429") and b"RateLimitError" in answer
    finally:
        live.stop()
