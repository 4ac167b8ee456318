"""The benchmarks stand outside the library: public API and documented extension points only.

Every ``omnimem`` module the benchmark package imports is listed here and in benchmarks/README.md
("Extension points"); no benchmark reaches into a Memory's store, indexes or private members. The
wheel ships ``omnimem`` alone.
"""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

import pytest
import typer
from setuptools import find_packages

ROOT = Path(__file__).resolve().parents[2]
FILES = sorted((ROOT / "benchmarks").rglob("*.py"))  # the top, the harness and every group

EXTENSION_POINTS = {
    "omnimem",  # Memory, Context, Hit, MAU, errors, __version__
    "omnimem.cli",  # cold start: the CLI's own import cost
    "omnimem.embed", "omnimem.embed.base",  # the Embedder protocol and registry
    "omnimem.embed.query",  # FastQueries, query_model: search-floor times the query model a search calls, alone
    "omnimem.errors",
    "omnimem.fusion",  # rank fusion for the raw-turn baselines
    "omnimem.engine.retrieval.learnt",  # watch, features, LinearRanker: what ranker-train trains the learnt ranking on
    "omnimem.index.dense", "omnimem.index.sparse",
    "omnimem.integrations.langchain", "omnimem.integrations.langgraph",  # scope-probe drives them as users do  # DenseIndex / SparseIndex for the baselines and perf recall
    "omnimem.contract.loaders",  # LoCoMo / JSONL loaders
    "omnimem.llm", "omnimem.llm.base",  # the LLM protocol, FakeLLM
    "omnimem.mau",  # search_text: the text a unit is indexed by
    "omnimem.media.audio", "omnimem.media.video",  # the media filters the media benchmark measures
    "omnimem.otel",  # set_tracer_provider: search-stages reads a search's stage spans
    "omnimem.mcp",  # create_mcp, Caller: the MCP server the MCP latency benchmark measures
    "omnimem.server.app",  # DEFAULT_SEARCH_CONCURRENCY: the search cap serve-load records
    "omnimem.text",  # content_words: the query words BM25 matches on, as in the default retrieval
    "omnimem.timeparse", "omnimem.tokens",  # the same time format and token counter as the pyramid
    "omnimem.store.base",  # SearchFilter: what pg-text-sql hands the PostgreSQL search
    "omnimem.store.postgres.bulk",  # BulkLoader, build_vector_index: how pg-scale fills PostgreSQL, HNSW build time
    "omnimem.store.postgres.search",  # ef_search, PgCandidates, filter_sql: the SQL search pg-scale / pg-text-sql time
    "omnimem.store.postgres.store",  # PostgresStore: pg-text-sql opens the database's store to time its BM25 alone
}
INTERNALS = {"store", "indexes", "_retriever", "_ingestor", "_lock", "_write_lock", "_check_open", "_need_graph"}


def omnimem_imports(tree: ast.AST) -> set[str]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "omnimem":
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.split(".")[0] == "omnimem")
    return found


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.relative_to(ROOT / "benchmarks").as_posix())
def test_benchmarks_import_only_public_modules(path: Path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    assert omnimem_imports(tree) <= EXTENSION_POINTS
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and "omnimem." in node.value:  # code run in a child process
            for line in node.value.splitlines():
                if line.strip().startswith(("from omnimem", "import omnimem")):
                    assert line.split()[1] in EXTENSION_POINTS, line


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.relative_to(ROOT / "benchmarks").as_posix())
def test_benchmarks_use_no_memory_internals(path: Path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    owners = {"args", "self"}  # argparse's namespace, the benchmark's own objects
    used = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)
            and not (isinstance(n.value, ast.Name) and n.value.id in owners)}
    assert not used & INTERNALS


def test_readme_lists_the_extension_points():
    readme = (ROOT / "benchmarks" / "README.md").read_text(encoding="utf-8")
    assert all(f"`{name}`" in readme for name in EXTENSION_POINTS - {"omnimem"})


def test_the_wheel_ships_omnimem_only():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    include = config["tool"]["setuptools"]["packages"]["find"]["include"]
    packages = find_packages(str(ROOT), include=include)
    assert "omnimem" in packages and not [p for p in packages if not p.startswith("omnimem")]
    assert not (ROOT / "omnimem" / "bench").exists()


def test_python_m_benchmarks_runs_from_the_repository_root():
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "benchmarks", "--help"], cwd=ROOT, capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert all(name in done.stdout for name in ("locomo", "memgallery", "perf", "media", "reliability"))
    from benchmarks.cli import GROUPS

    assert all(group.PANEL in done.stdout for group in GROUPS)  # the commands by group


def test_every_benchmark_with_a_main_is_a_command_of_its_group():
    """A module with ``main(argv)`` is run as ``python -m benchmarks <command>``, listed by its own group."""
    from benchmarks.cli import GROUPS, build_app

    not_commands = {"benchmarks.cli",  # the app itself
                    "benchmarks.speed.perf",  # one size of `perf`, the child process it starts
                    "benchmarks.speed.mem0_worker"}  # mem0's side of `mem0-compare`, run by mem0's own interpreter
    with_main = {".".join(p.relative_to(ROOT).with_suffix("").parts) for p in FILES
                 if any(isinstance(n, ast.FunctionDef) and n.name == "main" for n in ast.parse(p.read_text()).body)}
    scripts = {module for group in GROUPS for module, _ in group.SCRIPTS.values()}
    assert with_main - not_commands == scripts
    for group in GROUPS:
        folder = group.__name__.rsplit(".", 1)[0]  # benchmarks.<group>
        assert all(m.startswith((folder + ".", "benchmarks.harness.")) for m, _ in group.SCRIPTS.values())
    names = list(typer.main.get_command(build_app()).commands)
    assert len(names) == len(set(names)) >= len(scripts) + 4  # + locomo, memgallery, longmemeval, perf
