"""Fixtures for the framework integrations: an OpenTelemetry SDK recording omnimem's spans into memory.

Each test gets its own SDK ``TracerProvider`` with an in-memory exporter, handed to omnimem with
``omnimem.otel.set_tracer_provider`` and taken back after the test: OpenTelemetry's global provider
(settable once per process) is never touched, so no other test runs traced.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from omnimem import otel


class Spans:
    """The provider omnimem traces to during the test, and the spans it finished."""

    def __init__(self) -> None:
        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider()
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))

    def finished(self) -> list[ReadableSpan]:
        return list(self.exporter.get_finished_spans())

    def named(self, name: str) -> list[ReadableSpan]:
        return [s for s in self.finished() if s.name == name]

    def one(self, name: str) -> ReadableSpan:
        found = self.named(name)
        assert len(found) == 1, f"{len(found)} spans named {name}: {[s.name for s in self.finished()]}"
        return found[0]


@pytest.fixture
def spans() -> Iterator[Spans]:
    """Record omnimem's spans for this test."""
    recorder = Spans()
    otel.set_tracer_provider(recorder.provider)
    try:
        yield recorder
    finally:
        otel.set_tracer_provider(None)
        recorder.provider.shutdown()
