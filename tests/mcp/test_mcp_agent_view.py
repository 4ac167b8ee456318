"""MCP as an agent sees it, through fastmcp's Client over streamable HTTP on loopback (and raw HTTP for the 401s).

The server names itself with omnimem's version; ``recent`` lists the latest
memories without a query (HTTP's ``GET /v1/units``); integers sent as strings
("5", as some clients send numbers) are taken as integers; a refused key's
401 says omnimem's reason, not fastmcp's OAuth advice; ``search`` describes
the context it returns as it is.
"""

from __future__ import annotations

import json

import httpx
from conftest import McpSession, connect
from test_mcp_http import Served, served  # noqa: F401 - the uvicorn-served MCP app and its keys

import omnimem
from omnimem import Memory
from omnimem.mcp import create_mcp

MCP_ACCEPT = {"Accept": "application/json, text/event-stream"}
HELLO = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}


def test_the_server_reports_omnimems_name_and_version(served: Served) -> None:  # noqa: F811
    with connect(served.url, auth="omk_alice_read") as alice:
        info = alice.client.server_info
        assert info is not None and info.name == "omnimem" and info.version == omnimem.__version__
    hello = httpx.post(served.url, json=HELLO, headers={**MCP_ACCEPT, "Authorization": "Bearer omk_alice_read"})
    data = json.loads(next(line[5:] for line in hello.text.splitlines() if line.startswith("data:")))
    assert data["result"]["serverInfo"]["version"] == omnimem.__version__  # the legacy initialize handshake


def test_recent_lists_the_latest_memories_newest_first(served: Served) -> None:  # noqa: F811
    days = [f"2024-05-0{d}" for d in range(1, 7)]
    with connect(served.url, auth="omk_alice_write") as alice:
        ids = [alice.call("add", text=f"Alice's note of {day}: item {n}", time=day)["id"] for n, day in enumerate(days)]
        served.memory.add("Bob's note", user_id="bob", time="2024-05-09")  # another user: never listed for Alice
        page = alice.call("recent", limit=3)
        assert [m["id"] for m in page["memories"]] == ids[::-1][:3] and page["total"] == 6
        older = alice.call("recent", limit=3, offset=3)
        assert [m["id"] for m in older["memories"]] == ids[::-1][3:]
        assert alice.call("recent", limit=3, offset=6) == {"memories": [], "total": 6}
        since = alice.call("recent", since="2024-05-05")
        assert [m["summary"][:26] for m in since["memories"]] == ["Alice's note of 2024-05-06", "Alice's note of 2024-05-05"]
        assert alice.fail("recent", user_id="bob")["error"] == "ScopeError"  # a bound key: its own user only


def test_integers_sent_as_strings_are_taken_where_unambiguous(served: Served) -> None:  # noqa: F811
    with connect(served.url, auth="omk_alice_write") as alice:
        for n in range(4):
            alice.call("add", text=f"Alice rowed {n + 1} miles on the river", time=f"2024-06-0{n + 1}")
        assert len(alice.call("recent", limit="2")["memories"]) == 2
        assert alice.call("search", query="rowing on the river", budget="6000")["budget"] == 6000
        for bad in ("two", "2.0", "", " 2"):
            assert alice.fail("recent", limit=bad)["error"] == "InvalidInputError", bad
        assert alice.fail("add", text=5)["error"] == "InvalidInputError"  # a string argument stays strict


def test_a_refused_key_gets_omnimems_reason_in_its_401(served: Served) -> None:  # noqa: F811
    wrong = httpx.post(served.url, json=HELLO, headers={**MCP_ACCEPT, "Authorization": "Bearer omk_wrong"})
    assert wrong.status_code == 401
    assert wrong.json() == {"error": "AuthError", "message": "unknown or revoked API key"}
    challenge = wrong.headers["www-authenticate"]
    assert challenge.startswith('Bearer error="invalid_token"') and "unknown or revoked API key" in challenge
    assert "clear authentication tokens" not in wrong.text + challenge  # fastmcp's OAuth advice is gone
    missing = httpx.post(served.url, json=HELLO, headers=MCP_ACCEPT)
    assert missing.status_code == 401 and missing.headers["www-authenticate"] == "Bearer"  # RFC 6750: no error
    assert missing.json() == {"error": "AuthError",
                              "message": "this server needs an API key (Authorization: Bearer <key>)"}
    ok = httpx.post(served.url, json=HELLO, headers={**MCP_ACCEPT, "Authorization": "Bearer omk_alice_read"})
    assert ok.status_code == 200  # a good key is untouched


def test_the_search_description_says_how_the_context_is_laid_out(tmp_path: object, memory: Memory) -> None:
    turns = [{"speaker": "Ann", "text": "We planted tulips.\nThen we had tea.", "time": "2024-04-01T10:00"},
             {"speaker": "Bob", "text": "Red tulips by the gate", "time": "2024-04-01T10:00"}]
    memory.add_dialogue(turns, user_id="ann", session_id="garden")
    with connect(create_mcp(memory)) as owner:
        described = _description(owner, "search")
        context = owner.call("search", query="tulips", user_id="ann")["context"]
    assert "one memory per line" not in described  # it was not true
    assert "'[time]' header line per conversation and day, then one 'speaker: text' line per memory" in described
    lines = context.splitlines()
    assert lines[0] == "[2024-04-01 10:00]" and len(lines) == 4  # one header; Ann's two-line text runs over two
    assert {"Ann: We planted tulips.", "Then we had tea.", "Bob: Red tulips by the gate"} == set(lines[1:])


def _description(session: McpSession, tool: str) -> str:
    return str(session.tools()[tool].description)
