"""search-stages: a search's stage spans add up to the search (the stages inside packing to the packing)."""

from __future__ import annotations

import pytest

from benchmarks.speed.search_stages import COLUMNS, stage_times
from omnimem import Memory
from omnimem.otel import set_tracer_provider

sdk = pytest.importorskip("opentelemetry.sdk.trace")
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: E402


def test_stage_times_split_one_default_search():
    exporter = InMemorySpanExporter()
    provider = sdk.TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    with Memory(embedder="fake") as mem:
        mem.add_dialogue([{"speaker": "Ann", "text": f"I took the tram to the {place}."} for place in
                          ("museum", "harbour", "station")], user_id="u")
        set_tracer_provider(provider)
        try:
            mem.search("tram", user_id="u")
        finally:
            set_tracer_provider(None)
    got = stage_times(exporter.get_finished_spans())
    assert set(COLUMNS) <= set(got)
    assert all(got[s] > 0 for s in ("search", "dense", "sparse", "pack", "fit", "rows", "finish"))
    assert got["pack other"] >= 0 and got["outside"] >= 0  # the stages lie inside what holds them
    assert got["search"] >= got["pack"] >= got["fit"] + got["rows"] + got["finish"]
