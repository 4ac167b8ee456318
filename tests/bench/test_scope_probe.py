"""``python -m benchmarks scope-probe`` on a small configuration: its JSON, its zeros, and the SECURITY.md it writes."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from benchmarks.reliability import scope_probe

RESULTS = scope_probe.RESULTS  # benchmarks/results
OTHERS = ("time-fuzz.json", "ingest-race.json", "dialogue-stall.json")


def test_the_probe_counts_no_crossing_on_the_embedded_store_and_writes_the_page(tmp_path: Path) -> None:
    for name in OTHERS:
        shutil.copy(RESULTS / name, tmp_path / name)
    scope_probe.main(["--backends", "sqlite", "--collisions", "51", "--out", str(tmp_path)])

    data = json.loads((tmp_path / "scope-probe.json").read_text(encoding="utf-8"))
    assert data["benchmark"] == "scope-probe" and data["config"]["collisions"] == 51
    backend = data["backends"]["sqlite"]
    assert set(backend) == {"langgraph_spellings", "langgraph_collisions", "unscoped_retriever", "http_import"}
    spellings = backend["langgraph_spellings"]
    assert spellings["puts"] == sum(spellings["refused"].values()) + spellings["accepted"]
    assert set(spellings["refused"]) == {"InvalidInputError"}
    assert spellings["accepted_seen_by_their_own_user"] == spellings["accepted"]  # the surfaces do show items
    assert backend["langgraph_collisions"]["colliding_items_intact"] == 51
    assert backend["unscoped_retriever"]["refused_with"] == "ConfigError"
    imports = backend["http_import"]
    assert imports["events_imported"] == imports["claimed_actors"] and imports["log_events_read"] > 0
    assert {r["status"] for r in imports["refusals"].values()} == {400}
    assert imports["free_id_same_status_and_class"]
    assert data["totals"] == dict.fromkeys(data["totals"], 0) and len(data["totals"]) == 8

    page = (tmp_path / "SECURITY.md").read_text(encoding="utf-8")
    for item in ("| 1. ", "| 2. ", "| 3. ", "| 4-5. ", "| 6. ", "| 7. ", "| 8. "):
        assert item in page
    for command in ("scope-probe", "time-fuzz", "ingest-race", "dialogue-stall"):
        assert f"`python -m benchmarks {command}`" in page


def test_the_committed_security_page_matches_the_committed_result_files() -> None:
    assert (RESULTS / "SECURITY.md").read_text(encoding="utf-8") == scope_probe.page(RESULTS), (
        "rerun: python -m benchmarks scope-probe --page-only")
