"""Callers: roles, keys bound to a user or agent, the audit actor; the rules of the HTTP API, over MCP."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import pytest
from conftest import McpSession, connect

from omnimem import Memory
from omnimem.errors import AuthError, ConfigError, ForbiddenError, ScopeError
from omnimem.mcp import Caller, create_mcp

AsCaller = Callable[[Caller], Any]

WRITE_CALLS: list[tuple[str, dict[str, Any]]] = [
    ("add", {"text": "a new fact"}),
    ("add_dialogue", {"turns": [{"text": "a new turn"}]}),
    ("update", {"unit_id": "ID", "text": "changed"}),
    ("delete", {"unit_id": "ID"}),
]


@pytest.fixture
def bobs(memory: Memory) -> str:
    """A unit of another user, stored directly."""
    return str(memory.add("Bob's bank PIN hint is his dog's name", user_id="bob").id)


def test_caller_rules() -> None:
    key = Caller("key:alice-bot", "write", user_id="alice")
    assert key.bound and key.scope(None, None, "s1") == {"user_id": "alice", "agent_id": None, "session_id": "s1"}
    assert key.scope("alice", "helper", None) == {"user_id": "alice", "agent_id": "helper", "session_id": None}
    with pytest.raises(ScopeError, match="cannot act for user_id 'bob'"):
        key.scope("bob", None, None)
    key.require("read")
    with pytest.raises(ForbiddenError, match="needs the admin role"):
        key.require("admin")
    with pytest.raises(ScopeError):
        key.require_unbound("all=true")
    assert not Caller("key:ops").bound and Caller("key:ops").scope("x", None, None)["user_id"] == "x"
    for bad in ({"name": ""}, {"name": "k", "role": "root"}, {"name": "k", "user_id": ""}):
        with pytest.raises(ConfigError):
            Caller(**bad)  # type: ignore[arg-type]


def test_a_bound_key_acts_inside_its_user(as_caller: AsCaller, memory: Memory, bobs: str) -> None:
    with as_caller(Caller("key:alice-bot", "write", user_id="alice")) as alice:
        mine = alice.call("add", text="Alice's PIN hint is her first school")["id"]
        assert memory.get(mine).user_id == "alice"  # the key's user, without naming it

        assert alice.fail("add", text="planted", user_id="bob")["error"] == "ScopeError"
        assert alice.fail("search", query="PIN hint", user_id="bob")["error"] == "ScopeError"
        hits = alice.call("search", query="PIN hint")["hits"]
        assert [h["id"] for h in hits] == [mine]
        for tool, arguments in [("get", {}), ("history", {}), ("delete", {}), ("update", {"text": "mine now"})]:
            error = alice.fail(tool, unit_id=bobs, **arguments)
            assert error["error"] == "NotFoundError", tool  # never "exists, but not yours"
    assert memory.get(bobs).active and memory.stats()["units"] == 2


def test_a_key_bound_to_an_agent_sees_only_that_agent(as_caller: AsCaller, memory: Memory) -> None:
    other = memory.add("The planner agent's note", user_id="alice", agent_id="planner").id
    with as_caller(Caller("key:alice-coder", "write", user_id="alice", agent_id="coder")) as coder:
        mine = coder.call("add", text="The coder agent's note")["id"]
        assert memory.get(mine).agent_id == "coder"
        assert coder.fail("get", unit_id=other)["error"] == "NotFoundError"
        assert coder.fail("add", text="x", agent_id="planner")["error"] == "ScopeError"
        assert [h["id"] for h in coder.call("search", query="agent's note")["hits"]] == [mine]


@pytest.mark.parametrize(("tool", "arguments"), WRITE_CALLS)
def test_a_read_only_key_cannot_write(as_caller: AsCaller, memory: Memory, bobs: str, tool: str,
                                      arguments: dict[str, Any]) -> None:
    arguments = {k: (bobs if v == "ID" else v) for k, v in arguments.items()}
    with as_caller(Caller("key:reader", "read")) as reader:
        error = reader.fail(tool, **arguments)
        assert error["error"] == "ForbiddenError" and "read role" in error["message"]
        assert reader.call("get", unit_id=bobs)["id"] == bobs  # reading is fine
    assert memory.stats()["units"] == 1 and memory.get(bobs).active


def test_forget_needs_admin_and_a_bound_admin_forgets_only_its_user(as_caller: AsCaller, memory: Memory,
                                                                    bobs: str) -> None:
    with as_caller(Caller("key:alice-bot", "write", user_id="alice")) as writer:
        assert writer.fail("forget", user_id="alice")["error"] == "ForbiddenError"
    memory.add("Alice likes jazz", user_id="alice")
    memory.add("Alice likes chess", user_id="alice")
    with as_caller(Caller("key:alice-admin", "admin", user_id="alice")) as admin:
        assert admin.fail("forget", all=True)["error"] == "ScopeError"
        assert admin.fail("forget", session_id="s", all_users=True)["error"] == "ScopeError"
        assert admin.fail("forget", user_id="bob")["error"] == "ScopeError"
        assert admin.call("forget", unit_ids=[bobs]) == {"forgotten": 0}  # bob's unit is not in its scope
        assert admin.call("forget", reason="user left") == {"forgotten": 2}  # its scope: all of alice
    assert memory.get(bobs).active and memory.stats()["units"] == 1


def test_a_store_wide_admin_may_wipe_the_store(as_caller: AsCaller, memory: Memory, bobs: str) -> None:
    with as_caller(Caller("key:ops", "admin")) as ops:
        assert ops.call("forget", all=True, reason="reset") == {"forgotten": 1}
    assert memory.stats()["units"] == 0


def test_the_audit_log_names_the_caller(as_caller: AsCaller, memory: Memory) -> None:
    with as_caller(Caller("key:alice-bot", "write", user_id="alice")) as alice:
        unit = alice.call("add", text="Alice adopted a cat")["id"]
        new = alice.call("update", unit_id=unit, text="Alice adopted two cats")["id"]
        alice.call("delete", unit_id=new)
        actors = [(e["action"], e["actor"]) for e in alice.call("history", unit_id=unit)["events"]]
    assert actors[:2] == [("add", "key:alice-bot"), ("update", "key:alice-bot")]
    assert [(e.action, e.actor) for e in memory.history(new)][-1] == ("delete", "key:alice-bot")
    direct = memory.add("Written in-process by the owner").id
    assert memory.history(direct)[0].actor == "local:owner"  # the key's name did not leak past its calls


def test_the_owner_session_acts_as_the_memory_actor(owner: McpSession, memory: Memory) -> None:
    unit = owner.call("add", text="A note by the owner")["id"]
    assert memory.history(unit)[0].actor == "local:owner"


def test_authorize_refusing_makes_every_call_an_auth_error(memory: Memory) -> None:
    def no_one(token: str | None) -> Caller:
        raise AuthError("no API key" if token is None else "unknown key")

    with connect(create_mcp(memory, authorize=no_one)) as session:
        for tool, arguments in [("search", {"query": "x"}), ("add", {"text": "x"}), ("forget", {"all": True})]:
            assert session.fail(tool, **arguments) == {"error": "AuthError", "message": "no API key"}
    assert memory.stats()["units"] == 0


def test_without_fastmcp_create_mcp_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    import omnimem.mcp
    from omnimem.errors import MissingDependencyError

    monkeypatch.setitem(sys.modules, "fastmcp", None)  # as if fastmcp were not installed
    with pytest.raises(MissingDependencyError, match=r"pip install 'omnimem\[mcp\]'"):
        omnimem.mcp.create_mcp  # noqa: B018
    assert omnimem.mcp.Caller("key:x").role == "admin"  # callers need no fastmcp
