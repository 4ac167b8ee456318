"""Bad input and unknown ids become MCP tool errors with the OmnimemError code; nothing is stored."""

from __future__ import annotations

import pytest
from conftest import McpSession, connect

from omnimem import Memory
from omnimem.mcp import create_mcp


@pytest.mark.parametrize(("tool", "arguments"), [
    ("add", {"text": ""}),
    ("add", {"text": "fine", "top_secret": 1}),  # an argument the tool does not have
    ("add", {"text": "fine", "supersedes": "not-a-list"}),
    ("add", {"text": "x" * 10_000_001}),
    ("add_dialogue", {"turns": []}),
    ("add_dialogue", {"turns": [{"speaker": "Bob"}]}),  # a turn without text
    ("add_dialogue", {"turns": [{"text": "hi", "mood": "happy"}]}),  # an unknown turn field
    ("search", {"query": "tea", "top_k": "three"}),  # a string that is no numeral is not an integer
    ("search", {"query": "tea", "top_k": "3.5"}),  # nor one that is not a whole number
    ("search", {"query": "tea", "top_k": "0"}),  # a numeral is taken as its number, then checked like one
    ("search", {"query": "tea", "top_k": 0}),
    ("search", {"query": "q" * 20_001}),
    ("get", {}),
])
def test_arguments_outside_the_schema_are_invalid_input(owner: McpSession, memory: Memory, tool: str,
                                                        arguments: dict[str, object]) -> None:
    error = owner.fail(tool, **arguments)
    assert error["error"] == "InvalidInputError"
    assert error["message"] and "Traceback" not in error["message"] and "pydantic.dev" not in error["message"]
    assert memory.stats()["units"] == 0


@pytest.mark.parametrize(("tool", "arguments", "code", "words"), [
    ("add", {"text": "   "}, "InvalidInputError", "empty"),
    ("add", {"text": "fine", "time": "the day after yesterday"}, "InvalidTimeError", "time"),
    ("add", {"text": "fine", "metadata": {"blob": "x" * 1_000_001}}, "InvalidInputError", "metadata"),
    ("add", {"text": "fine", "supersedes": ["no-such-unit"]}, "NotFoundError", "no-such-unit"),
    ("add_dialogue", {"turns": [{"text": "ok"}, {"text": "ok", "time": "not a time"}]}, "InvalidTimeError", "turn 1"),
    ("search", {"query": "tea", "as_of": "someday"}, "InvalidTimeError", "someday"),
    ("search", {"query": "tea", "now": "someday"}, "InvalidTimeError", "someday"),  # now reaches Memory.search
    ("forget", {}, "InvalidInputError", "never means 'everything'"),
    ("forget", {"all": True, "user_id": "u"}, "InvalidInputError", "no other criteria"),
    ("forget", {"session_id": "s"}, "InvalidInputError", "all_users"),
])
def test_the_library_refusals_keep_their_code_and_message(owner: McpSession, memory: Memory, tool: str,
                                                          arguments: dict[str, object], code: str,
                                                          words: str) -> None:
    error = owner.fail(tool, **arguments)
    assert error["error"] == code and words in error["message"]
    assert memory.stats()["units"] == 0


@pytest.mark.parametrize("tool", ["get", "update", "delete"])
def test_an_unknown_id_is_not_found(owner: McpSession, tool: str) -> None:
    arguments = {"unit_id": "0" * 32}
    if tool == "update":
        arguments["text"] = "new text"
    error = owner.fail(tool, **arguments)
    assert error == {"error": "NotFoundError", "message": error["message"]} and "0" * 32 in error["message"]


def test_the_history_of_an_id_never_seen_is_empty_for_the_owner(owner: McpSession) -> None:
    assert owner.call("history", unit_id="0" * 32) == {"events": []}  # scoped callers get NotFoundError


def test_an_update_that_changes_nothing_is_refused_and_keeps_the_unit(owner: McpSession, memory: Memory) -> None:
    unit = owner.call("add", text="Hank owns a red bicycle", user_id="hank")["id"]
    error = owner.fail("update", unit_id=unit, text="Hank owns a red bicycle", user_id="hank")
    assert error["error"] == "InvalidInputError" and "changes nothing" in error["message"]
    assert memory.get(unit).active and memory.stats()["units"] == 1


def test_an_unexpected_failure_reaches_the_agent_without_details(memory: Memory,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("internal detail: /srv/secret/path")

    monkeypatch.setattr(memory, "search", broken)  # stands for a bug anywhere below the tool
    with connect(create_mcp(memory)) as session:
        result = session.portal.call(lambda: session.client.call_tool("search", {"query": "x"}, raise_on_error=False))
    assert result.is_error
    assert result.content[0].text == "Error calling tool 'search'"


def test_a_closed_store_is_a_store_error(memory: Memory) -> None:
    with connect(create_mcp(memory)) as session:
        memory.close()
        error = session.fail("search", query="anything")
    assert error == {"error": "StoreError", "message": "this Memory is closed"}
