"""The retrieval targets view: each target's figure, gap and interval, read from result files as runs write them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.retrieval import targets
from benchmarks.retrieval.targets import TARGETS, Target, evaluate


def result(ours_1k, ours_6k, naive_1k, naive_6k, cats=None, over=0.0):
    return {"command": "python -m benchmarks x", "date": "2026-12-02",
            "systems": {"omnimem": {"overall": {"over_1k": over, "over_6k": 0.0}}},
            "per_question": {"omnimem": {"1k": ours_1k, "6k": ours_6k}, "naive-dense": {"1k": naive_1k, "6k": naive_6k}},
            **({"question_categories": cats} if cats else {})}


def test_a_floor_target_reports_its_gap_and_the_figures_interval():
    data = result([1.0, 1.0, 0.0, 1.0], [1.0] * 4, [0.0] * 4, [1.0] * 4)
    row = evaluate(Target("d", "f.json", "1k", 0.85), data)
    assert row["figure"] == 0.75 and row["gap"] == pytest.approx(-0.1) and row["met"] is False
    assert row["interval"]["low"] <= 0.75 <= row["interval"]["high"]
    assert evaluate(Target("d", "f.json", "6k", 0.97), data)["met"] is True


def test_a_naive_dense_target_pairs_the_questions():
    data = result([1.0, 0.5, 1.0, 1.0], [1.0] * 4, [1.0, 0.5, 0.0, 0.5], [1.0, 1.0, 1.0, 0.9])
    row = evaluate(Target("d", "f.json", "1k", None), data)
    assert row["naive_dense"] == 0.5 and row["target_value"] == 0.55 and row["gap"] == pytest.approx(0.325)
    assert row["met"] is True and row["interval"]["mean"] == 0.375
    six = evaluate(Target("d", "f.json", "6k", None), data)
    assert six["met"] is False and six["gap"] == pytest.approx(1.0 - 0.975 - 0.05)


def test_a_category_target_reads_only_that_categorys_questions():
    data = result([1.0, 0.0, 0.0, 1.0], [1.0] * 4, [0.0] * 4, [0.0] * 4, cats=[1, 1, 4, 4])
    row = evaluate(Target("d", "f.json", "1k", 0.70, "1", "multi-hop"), data)
    assert row["questions"] == 2 and row["figure"] == 0.5 and row["category"] == "multi-hop"
    with pytest.raises(ValueError, match="categories"):
        evaluate(Target("d", "f.json", "1k", 0.70, "1"), result([1.0], [1.0], [1.0], [1.0]))
    with pytest.raises(ValueError, match="re-run"):
        evaluate(Target("d", "f.json", "1k", 0.70), {"command": "x"})


def test_the_command_writes_every_target_from_the_files(tmp_path: Path):
    for name in {t.file for t in TARGETS}:
        data = result([1.0, 0.8, 0.9], [1.0, 1.0, 0.9], [0.5, 0.5, 0.5], [0.9, 0.9, 0.9], cats=["1", "1", "2"])
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(json.dumps(data), encoding="utf-8")
    assert targets.main(["--results", str(tmp_path)]) == 0
    doc = json.loads((tmp_path / "retrieval-targets.json").read_text())
    assert len(doc["targets"]) == len(TARGETS) and set(doc["sources"]) == {t.file for t in TARGETS}
    md = (tmp_path / "retrieval-targets.md").read_text()
    assert "| LoCoMo test (multi-hop) | 1k | >= 0.70 | 0.900 | +0.200 | yes |" in md
    assert "**no**" in md  # 6k: 0.967 against 0.97


def test_a_missing_result_file_is_one_line_naming_it(tmp_path: Path):
    with pytest.raises(SystemExit, match="locomo-test.json is missing"):
        targets.main(["--results", str(tmp_path)])
