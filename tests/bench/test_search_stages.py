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


def test_against_times_a_setting_beside_the_default_on_the_same_store(tmp_path):
    """``--against SETTING=VALUE``: a second Memory with that setting, timed round by round in turn."""
    import json

    from benchmarks.harness.perf import make_embedder
    from benchmarks.harness.synthetic import sessions
    from benchmarks.speed.search_stages import main

    with Memory(tmp_path / "store", embedder=make_embedder("synthetic")) as mem:
        for user, session, turns in sessions(300):
            mem.add_dialogue(turns, user_id=user, session_id=session)
    args = ["--store", str(tmp_path / "store"), "--size", "300", "--embedder", "synthetic", "--queries", "6",
            "--rounds", "2", "--budgets", "1000", "--out", str(tmp_path / "out")]
    assert main([*args, "--against", "elide_speakers=false"]) == 0
    doc = json.loads((tmp_path / "out" / "search-stages-300.json").read_text())
    assert doc["against"] == "elide_speakers=false" and set(doc["runs"]) == {"1000-global", "1000-user"}
    for run in doc["runs"].values():
        assert run["against_cpu_ms_p50"] > 0 and run["cpu_ms_p50"] > 0 and run["against_hits_mean"] > 0
        assert run["ratio"] == pytest.approx(run["cpu_ms_p50"] / run["against_cpu_ms_p50"], rel=0.01)
    assert "elide_speakers=false: CPU p50 ms" in (tmp_path / "out" / "search-stages-300.md").read_text()
    with pytest.raises(SystemExit) as bad:
        main([*args, "--against", "elide_speakers"])
    assert bad.value.code == 2
