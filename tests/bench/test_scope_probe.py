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
    ours = (RESULTS / "SECURITY.md").read_text(encoding="utf-8").split(scope_probe.OTHERS, 1)[0]
    assert ours.rstrip("\n") == scope_probe.page(RESULTS).rstrip("\n"), (
        "rerun: python -m benchmarks scope-probe --page-only")


def test_rewriting_the_page_keeps_the_sections_other_commands_wrote(tmp_path: Path) -> None:
    for name in ("scope-probe.json", "time-fuzz.json", "ingest-race.json"):
        if (RESULTS / name).exists():
            (tmp_path / name).write_text((RESULTS / name).read_text(encoding="utf-8"), encoding="utf-8")
    first = scope_probe.write_page(tmp_path).read_text(encoding="utf-8")
    assert scope_probe.OTHERS in first
    (tmp_path / "SECURITY.md").write_text(first + "\n## Hostile model\n\n| a | b |\n", encoding="utf-8")
    again = scope_probe.write_page(tmp_path).read_text(encoding="utf-8")
    assert again.endswith("\n## Hostile model\n\n| a | b |\n")
    assert again.count(scope_probe.OTHERS) == 1 and again.startswith(first.split(scope_probe.OTHERS)[0])
