"""The MCP server as `omnimem serve` mounts it: /mcp of create_app, with the store's API keys as bearer tokens."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from conftest import connect

from omnimem import Memory
from omnimem.server.apikeys import create_key
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
