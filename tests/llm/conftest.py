"""Fixtures for the LLM tests: a real HTTP fake server and fast-failing providers."""

from __future__ import annotations

import os
import socket
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from fake_openai import FakeOpenAIServer

from omnimem.llm import LLMConfig, OpenAICompatibleLLM

# Small enough that every retry and timeout path finishes in well under a second.
FAST_SETTINGS: dict[str, Any] = {
    "model": "test-model",
    "api_key": "sk-test",
    "timeout": 2.0,
    "max_retries": 2,
    "backoff_base": 0.001,
    "backoff_max": 0.05,
}


@pytest.fixture(autouse=True)
def _isolated_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    """Keep the developer's own OMNIMEM_* settings out of every test."""
    for name in list(os.environ):
        if name.startswith("OMNIMEM_LLM_") or name == "OMNIMEM_CONFIG":
            monkeypatch.delenv(name)


@pytest.fixture(scope="session")
def _running_server() -> Iterator[FakeOpenAIServer]:
    server = FakeOpenAIServer()
    server.start()
    yield server
    server.stop()


@pytest.fixture
def server(_running_server: FakeOpenAIServer) -> FakeOpenAIServer:
    """The shared fake server, with an empty script and no recorded requests."""
    _running_server.reset()
    return _running_server


@pytest.fixture
def make_llm(server: FakeOpenAIServer) -> Iterator[Callable[..., OpenAICompatibleLLM]]:
    """Build providers pointed at the fake server; ``make_llm(timeout=0.1)`` overrides."""
    built: list[OpenAICompatibleLLM] = []

    def make(**overrides: Any) -> OpenAICompatibleLLM:
        settings = {"base_url": server.url, **FAST_SETTINGS, **overrides}
        llm = OpenAICompatibleLLM(LLMConfig(**settings))
        built.append(llm)
        return llm

    yield make
    for llm in built:
        llm.close()


@pytest.fixture
def closed_port_url() -> str:
    """A loopback URL nothing listens on: bind a free port, then release it."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"
