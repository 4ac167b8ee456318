"""LangChain's own standard retriever tests (``langchain-tests``) against OmnimemRetriever, over an embedded
Memory and over a remote ``Memory(url="http://...")`` on a live server. Nothing is skipped or overridden."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from langchain_core.retrievers import BaseRetriever
from langchain_tests.integration_tests import RetrieversIntegrationTests

from omnimem import Memory
from omnimem.integrations.langchain import OmnimemRetriever
from tests.serving import ServedMemory

TURNS = [
    {"speaker": "ana", "text": "I moved to Lisbon in March.", "time": "2024-03-02T10:00"},
    {"speaker": "ben", "text": "How do you like the trams there?", "time": "2024-03-02T10:01"},
    {"speaker": "ana", "text": "The yellow tram up the hill is lovely.", "time": "2024-03-02T10:02"},
    {"speaker": "ana", "text": "I take the tram to work every morning.", "time": "2024-03-02T10:03"},
    {"speaker": "ben", "text": "The tram in Porto is older.", "time": "2024-03-02T10:04"},
    {"speaker": "ana", "text": "My sister visits in May.", "time": "2024-03-02T10:05"},
]


class OmnimemRetrieverStandard(RetrieversIntegrationTests):
    """The standard class's settings; the subclasses below give it a memory (embedded or remote)."""

    memory: Memory

    @property
    def retriever_constructor(self) -> type[BaseRetriever]:
        return OmnimemRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return {"memory": self.memory, "user_id": "ana", "budget": 2000}

    @property
    def retriever_query_example(self) -> str:
        return "which tram does ana take"


class TestOverAnEmbeddedMemory(OmnimemRetrieverStandard):
    @pytest.fixture(autouse=True, scope="class")
    @classmethod
    def _memory(cls, tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
        with Memory(tmp_path_factory.mktemp("standard") / "m", embedder="fake") as mem:
            mem.add_dialogue(TURNS, user_id="ana")
            cls.memory = mem
            yield


class TestOverARemoteMemory(OmnimemRetrieverStandard):
    @pytest.fixture(autouse=True, scope="class")
    @classmethod
    def _memory(cls, tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
        backend = Memory(tmp_path_factory.mktemp("standard") / "m", embedder="fake")
        with ServedMemory(backend, mcp=False) as remote:
            remote.add_dialogue(TURNS, user_id="ana")
            cls.memory = remote
            yield
