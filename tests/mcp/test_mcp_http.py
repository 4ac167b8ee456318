"""Streamable HTTP: the MCP app mounted at /mcp of a FastAPI app, served by uvicorn on a free loopback port,
driven by fastmcp's Client with API keys as bearer tokens."""

from __future__ import annotations

import base64
import socket
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import httpx
import pytest
import uvicorn
from conftest import connect
from fastapi import FastAPI
from fastmcp.exceptions import McpError
from test_mcp_raw import png

from omnimem import Memory
from omnimem.errors import AuthError
from omnimem.mcp import Caller, create_mcp


@dataclass
class Keys:
    """A stand-in for the server's key table: token -> caller; revoking deletes the entry."""

    callers: dict[str, Caller] = field(default_factory=dict)
    asked: list[str | None] = field(default_factory=list)

    def authorize(self, token: str | None) -> Caller:
        self.asked.append(token)
        if token is None:
            raise AuthError("this server needs an API key (Authorization: Bearer <key>)")
        caller = self.callers.get(token)
        if caller is None:
            raise AuthError("unknown or revoked API key")
        return caller


@dataclass
class Served:
    url: str  # the MCP endpoint
    keys: Keys
    memory: Memory


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def served(memory: Memory) -> Iterator[Served]:
    keys = Keys({"omk_alice_write": Caller("key:alice-bot", "write", user_id="alice"),
                 "omk_alice_read": Caller("key:alice-reader", "read", user_id="alice")})
    mcp_app = create_mcp(memory, authorize=keys.authorize).http_app(path="/")

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:  # a server's own lifespan, entering the MCP app's:
        async with mcp_app.lifespan(app):  # its streamable-HTTP session manager runs in it (Starlette does not
            yield  # run the lifespan of a mounted app)

    app = FastAPI(lifespan=lifespan)
    app.mount("/mcp", mcp_app)
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert time.monotonic() < deadline and thread.is_alive(), "uvicorn did not start"
        time.sleep(0.02)
    try:
        yield Served(f"http://127.0.0.1:{port}/mcp/", keys, memory)
    finally:
        server.should_exit = True
        thread.join(timeout=30)


def test_a_key_works_over_http_and_is_the_audit_actor(served: Served) -> None:
    with connect(served.url, auth="omk_alice_write") as alice:
        unit = alice.call("add", text="Alice keeps her bike in the courtyard")["id"]
        hits = alice.call("search", query="where is the bike")["hits"]
        assert hits[0]["id"] == unit
        assert alice.call("get", unit_id=unit)["user_id"] == "alice"
        assert alice.call("history", unit_id=unit)["events"][0]["actor"] == "key:alice-bot"
    assert served.memory.get(unit).user_id == "alice"
    assert None not in served.keys.asked  # every request carried the key


def test_scope_and_role_hold_over_http(served: Served) -> None:
    bobs = served.memory.add("Bob's diary entry", user_id="bob").id
    with connect(served.url, auth="omk_alice_write") as alice:
        assert alice.fail("get", unit_id=bobs)["error"] == "NotFoundError"
        assert alice.fail("search", query="diary", user_id="bob")["error"] == "ScopeError"
    with connect(served.url, auth="omk_alice_read") as reader:
        assert reader.fail("add", text="x")["error"] == "ForbiddenError"
        assert reader.fail("delete", unit_id=bobs)["error"] == "ForbiddenError"
    assert served.memory.stats()["units"] == 1


def test_raw_content_over_http(served: Served) -> None:
    data = png(3)
    unit = served.memory.add_image(data, caption="Alice's floor plan", user_id="alice").id
    with connect(served.url, auth="omk_alice_read") as alice:
        [content] = alice.read(f"omnimem://units/{unit}/raw")
    assert content.mime_type == "image/png" and base64.b64decode(content.blob) == data


@pytest.mark.parametrize("headers", [{}, {"Authorization": "Bearer omk_wrong"}, {"Authorization": "Basic abc"}])
def test_requests_without_a_valid_key_get_401_before_any_tool_runs(served: Served, headers: dict[str, str]) -> None:
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "add", "arguments": {"text": "x"}}}
    response = httpx.post(served.url, json=call, headers={**headers, "Accept": "application/json, text/event-stream"})
    assert response.status_code == 401
    assert response.headers["www-authenticate"].startswith("Bearer")
    assert served.memory.stats()["units"] == 0


def test_the_fastmcp_client_with_a_wrong_key_cannot_connect(served: Served) -> None:
    with pytest.raises(McpError, match="Server returned an error response"):  # the HTTP 401 above
        with connect(served.url, auth="omk_wrong"):
            pass


def test_a_revoked_key_stops_working_on_the_next_request(served: Served) -> None:
    with connect(served.url, auth="omk_alice_write") as alice:
        alice.call("add", text="Before revocation")
        del served.keys.callers["omk_alice_write"]
        with pytest.raises(McpError, match="Server returned an error response"):  # the HTTP 401 above
            alice.call("add", text="After revocation")
    assert served.memory.stats()["units"] == 1


def test_concurrent_keys_each_get_their_own_audit_actor(served: Served) -> None:
    """Callers run on worker threads at the same time: every write is attributed to the key that made it."""
    served.keys.callers["omk_bob_write"] = Caller("key:bob-bot", "write", user_id="bob")
    written: dict[str, list[str]] = {}

    def agent(key: str, name: str) -> None:
        with connect(served.url, auth=key) as session:
            written[name] = [session.call("add", text=f"{name} note number {i}")["id"] for i in range(12)]

    threads = [threading.Thread(target=agent, args=args) for args in
               (("omk_alice_write", "alice"), ("omk_bob_write", "bob"))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert sorted(written) == ["alice", "bob"] and all(len(ids) == 12 for ids in written.values())
    for name, ids in written.items():
        for unit in ids:
            assert served.memory.get(unit).user_id == name
            assert [e.actor for e in served.memory.history(unit)] == [f"key:{name}-bot"]
