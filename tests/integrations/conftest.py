"""Fixtures for the framework integrations: an OpenTelemetry SDK recording into memory while a test asks.

OpenTelemetry's global tracer provider can be set once per process, so the SDK provider is
installed once, with a sampler that records only while the ``spans`` fixture is active: other
tests see a configured provider whose spans are dropped before anything is recorded.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import pytest

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import Decision, Sampler, SamplingResult
from opentelemetry.trace import Link, SpanKind
from opentelemetry.util.types import Attributes


class Switch(Sampler):
    """Samples every span while ``on``, none otherwise."""

    on = False

    def should_sample(self, parent_context: Context | None, trace_id: int, name: str,
                      kind: SpanKind | None = None, attributes: Attributes = None,
                      links: Sequence[Link] | None = None, trace_state: Any = None) -> SamplingResult:
        return SamplingResult(Decision.RECORD_AND_SAMPLE if self.on else Decision.DROP, attributes)

    def get_description(self) -> str:
        return "tests' switch"


SWITCH = Switch()
EXPORTER = InMemorySpanExporter()


class Spans:
    """The spans finished while the fixture was active."""

    def finished(self) -> list[ReadableSpan]:
        return list(EXPORTER.get_finished_spans())

    def named(self, name: str) -> list[ReadableSpan]:
        return [s for s in self.finished() if s.name == name]

    def one(self, name: str) -> ReadableSpan:
        found = self.named(name)
        assert len(found) == 1, f"{len(found)} spans named {name}: {[s.name for s in self.finished()]}"
        return found[0]


@pytest.fixture
def spans() -> Iterator[Spans]:
    """Record spans from omnimem for this test (an SDK TracerProvider with an in-memory exporter)."""
    if not isinstance(trace.get_tracer_provider(), TracerProvider):
        provider = TracerProvider(sampler=SWITCH)
        provider.add_span_processor(SimpleSpanProcessor(EXPORTER))
        trace.set_tracer_provider(provider)
    EXPORTER.clear()
    SWITCH.on = True
    try:
        yield Spans()
    finally:
        SWITCH.on = False
        EXPORTER.clear()
