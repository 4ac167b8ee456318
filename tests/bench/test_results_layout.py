"""benchmarks/results/: the index pages, experiments/, one current file per subject, the rest under archive/.

The generated pages (the results README, archive/runs/, archive/README.md) equal what
``python -m benchmarks report`` makes from the committed files, every archived file has its line, and
CURRENT.md's generated tables are what ``python -m benchmarks current`` makes of benchmarks/harness/figures.py.
"""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.harness import archive, figures, report
from benchmarks.harness.paths import RESULTS


def test_the_top_level_holds_the_index_pages_the_logs_the_archive_and_current_files():
    for path in RESULTS.iterdir():
        if path.is_dir():
            assert path.name in ("experiments", "archive"), f"{path.name}/ belongs under archive/"
        else:
            assert path.name in report.INDEX_PAGES or path.suffix == ".json" or path.with_suffix(".json").exists(), \
                f"{path.name}: a table without its JSON file"


def test_the_generated_pages_are_what_the_report_makes():
    for path, text in report.pages(RESULTS).items():
        assert path.read_text(encoding="utf-8") == text, f"{path.relative_to(RESULTS)}: run python -m benchmarks report"


def test_every_archived_file_has_a_line_in_the_archive_index():
    listed = [e.path for e in archive.entries(RESULTS / "archive")]
    for path in (RESULTS / "archive").rglob("*"):
        rel = path.relative_to(RESULTS / "archive").as_posix()
        if path.is_dir() or rel == "README.md" or rel.startswith("runs/"):
            continue
        stem = rel.rsplit(".", 1)[0]
        assert any(rel == e or (e.endswith("/") and rel.startswith(e)) or e.rsplit(".", 1)[0] == stem
                   for e in listed), rel


def test_a_line_gives_what_a_run_measured_its_date_command_and_the_page_that_cites_it(tmp_path: Path):
    (tmp_path / "archive" / "ab").mkdir(parents=True)
    run = {"benchmark": "locomo", "split": "dev", "questions": 3, "systems": {"omnimem": {}, "x-new": {}},
           "categories": {}, "command": "python -m benchmarks locomo --retrieval --name x-run",
           "date": "2026-12-01T10:00"}
    (tmp_path / "archive" / "locomo-x-run.json").write_text(json.dumps(run), encoding="utf-8")
    for side, when in (("before-1", "2026-12-02"), ("after-1", "2026-12-03")):
        (tmp_path / "archive" / "ab" / f"{side}.json").write_text(
            json.dumps({"benchmark": "serve-load", "command": f"python -m benchmarks serve-load --out {side}.json",
                        "when": when}), encoding="utf-8")
    (tmp_path / "PERF.md").write_text("# Perf\n\n## Stop 1\n\nthe pairs in `archive/ab/`\n", encoding="utf-8")
    (tmp_path / "CURRENT.md").write_text("# Current\n\n## Retrieval\n\nbefore: `locomo-x-run`\n", encoding="utf-8")
    text = archive.index(tmp_path)
    assert ("- [ab/](ab/): `serve-load` (2 runs, 2026-12-02 to 2026-12-03); "
            "`python -m benchmarks serve-load --out after-1.json`; cited by PERF.md (\"Stop 1\")") in text
    assert ("- [locomo-x-run.json](locomo-x-run.json): LoCoMo dev retrieval, 3 questions: `omnimem`, `x-new` "
            "(2026-12-01); `python -m benchmarks locomo --retrieval --name x-run`; "
            "cited by CURRENT.md (\"Retrieval\")") in text


def test_current_md_is_its_generated_tables_and_every_figure_is_in_its_file():
    for page in {t.page for t in figures.TABLES}:
        text = (RESULTS / page).read_text(encoding="utf-8")
        assert figures.regenerate(RESULTS, page, text) == text, f"{page}: run python -m benchmarks current"
    for table in figures.TABLES:
        for _, cells in table.rows:
            for figure in (f for c in cells for f in c.figures):
                found = figures.value(RESULTS, figure.file, figure.key)
                assert isinstance(found, (int, float)) and not isinstance(found, bool), figure


def test_a_generated_table_is_made_again_from_its_files_and_the_prose_around_it_kept(tmp_path: Path):
    (tmp_path / "run.json").write_text(json.dumps({"systems": {"x-0.5": {"1k": 0.81249, "6k": 0.9}}}), encoding="utf-8")
    cell = figures.Cell("{0} [{1}]", (figures.Figure("run.json", "systems.x-0.5.1k"),
                                      figures.Figure("run.json", "systems.x-0.5.6k", 1)))
    table = figures.Table("t", "PAGE.md", ("split", "1k [6k]"), "|---|---:|", (("dev", (cell,)),))
    page = "Prose.\n\n<!-- generated: t -->\n| split | 1k |\n| dev | 0.7 |\n<!-- end generated -->\n\nMore prose.\n"
    assert figures.regenerate(tmp_path, "PAGE.md", page, [table]) == (
        "Prose.\n\n<!-- generated: t -->\n| split | 1k [6k] |\n|---|---:|\n| dev | 0.812 [0.9] |\n"
        "<!-- end generated -->\n\nMore prose.\n")
    assert figures.checks()[0][1].startswith("| LoCoMo dev | {0} [{1}, {2}] | {3} | {4} | {5} [{6}, {7}]")
