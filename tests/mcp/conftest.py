"""MCP fixtures: fastmcp's own Client, driven from plain (sync) tests through an anyio portal.

``McpSession`` wraps one connected client: ``call`` returns a tool's JSON
result, ``fail`` returns the ``{"error", "message"}`` body of a tool error
(and fails the test if the call succeeded), ``read`` returns a resource's
contents.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from anyio.from_thread import start_blocking_portal
from fastmcp import Client

from omnimem import Memory
from omnimem.mcp import Caller, create_mcp


class McpSession:
    """A connected fastmcp Client with blocking helpers."""

    def __init__(self, portal: Any, client: Client[Any]) -> None:
        self.portal, self.client = portal, client

    def call(self, tool: str, **arguments: Any) -> Any:
        result = self.portal.call(lambda: self.client.call_tool(tool, arguments, raise_on_error=False))
        assert not result.is_error, f"{tool} failed: {result.content[0].text}"
        return result.structured_content

    def fail(self, tool: str, **arguments: Any) -> dict[str, Any]:
        result = self.portal.call(lambda: self.client.call_tool(tool, arguments, raise_on_error=False))
        assert result.is_error, f"{tool} succeeded: {result.structured_content}"
        body: dict[str, Any] = json.loads(result.content[0].text)
        return body

    def read(self, uri: str) -> list[Any]:
        return list(self.portal.call(lambda: self.client.read_resource(uri)))

    def tools(self) -> dict[str, Any]:
        return {t.name: t for t in self.portal.call(self.client.list_tools)}

    def templates(self) -> list[Any]:
        return list(self.portal.call(self.client.list_resource_templates))


@contextmanager
def connect(target: Any, **client_options: Any) -> Iterator[McpSession]:
    """A fastmcp Client connected to ``target`` (a server in-process, a URL, or a transport)."""
    with start_blocking_portal() as portal:
        client: Client[Any] = Client(target, **client_options)
        with portal.wrap_async_context_manager(client):
            yield McpSession(portal, client)


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[Memory]:
    with Memory(tmp_path / "store", embedder="fake", actor="local:owner") as m:
        yield m


@pytest.fixture
def owner(memory: Memory) -> Iterator[McpSession]:
    """The store's owner in-process: no authorize, a local admin."""
    with connect(create_mcp(memory)) as session:
        yield session


@pytest.fixture
def as_caller(memory: Memory) -> Callable[..., Any]:
    """``as_caller(Caller(...))``: an in-process session whose every call is that caller's."""

    @contextmanager
    def open_as(caller: Caller) -> Iterator[McpSession]:
        with connect(create_mcp(memory, authorize=lambda token: caller)) as session:
            yield session

    return open_as
