"""The tests are laid out like the package: a test of ``omnimem/<part>/`` lives in ``tests/<part>/``.

CONTRIBUTING.md ("Where a test goes") says which folder takes what; these checks keep the tree that way:
no new test file flat in ``tests/``, and every folder of tests names a part of the package or one of the
few folders for what is not one part (the facade and top-level modules, benchmarks, whole-tree rules...).
"""

from __future__ import annotations

from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
PACKAGE = TESTS.parent / "omnimem"
CONTRIBUTING = (TESTS.parent / "CONTRIBUTING.md").read_text(encoding="utf-8")

FLAT = {"test_docs.py", "test_docs_servers.py", "test_readme_install.py", "test_results.py"}  # the pages' checks
NOT_A_PART = {
    "architecture": "rules over the whole tree",
    "bench": "the benchmarks package (benchmarks/)",
    "console": "the web console in a browser (omnimem/server/console/)",
    "core": "the facade (memory.py) and the top-level modules",
    "postgres": "PostgreSQL only (omnimem/store/postgres/), skipped without its extra",
    "reliability": "crashes, kills and concurrency across processes",
}


def test_no_test_file_lies_flat_in_tests_but_the_pages_checks() -> None:
    flat = sorted(p.name for p in TESTS.glob("test_*.py"))
    assert set(flat) <= FLAT, (f"put {sorted(set(flat) - FLAT)} in the folder of the part it tests "
                               "(CONTRIBUTING.md, 'Where a test goes')")


def test_every_folder_of_tests_mirrors_a_part_of_the_package() -> None:
    folders = {p.parent.relative_to(TESTS) for p in TESTS.rglob("test_*.py")} - {Path(".")}
    strays = sorted(str(f) for f in folders
                    if not (PACKAGE / f).is_dir() and f.parts[0] not in NOT_A_PART)
    assert strays == [], f"test folders that name no part of omnimem/: {strays}"


def test_contributing_says_where_each_folder_of_tests_goes() -> None:
    tops = {p.relative_to(TESTS).parts[0] for p in TESTS.rglob("test_*.py") if p.parent != TESTS}
    missing = sorted(top for top in tops if f"`tests/{top}/" not in CONTRIBUTING)
    assert missing == [], f"CONTRIBUTING.md's 'Where a test goes' names no row for tests/{missing}"
