"""The contributor's fast loop: ``pytest -m fast`` (about two minutes on two cores; CI runs everything).

A test is in the fast subset when its file is listed here, it is not marked
``slow`` (real models, data sets), and it runs on an embedded engine (a test
parametrised over engines or backends keeps its in-memory and on-disk runs and
leaves PostgreSQL and the live server to the full suite).
``tests/architecture/test_fast_subset.py`` checks that these files still call
every facade verb, so the loop covers every verb on the embedded engine.
"""

from __future__ import annotations

from pathlib import Path

TESTS = Path(__file__).resolve().parent

# Files of the fast subset, relative to tests/. Left out on purpose: the one-shot CLI and
# cold-start tests (each starts processes that load real models), the property tests of
# every verb and command, the ONNX and parallel-MiniLM checks, and whole wings that start
# servers, PostgreSQL, browsers or media tools (server/, postgres/, console/, reliability/...).
FAST_FILES: frozenset[str] = frozenset({
    "architecture/test_architecture_doc.py",
    "architecture/test_import_graph.py",
    "architecture/test_surfaces.py",
    "architecture/test_write_path.py",
    "architecture/test_fast_subset.py",
    "graph/test_graph_memory.py",
    "llm/test_ask.py",
    "mcp/test_mcp_tools.py",
    "media/test_media_memory.py",
    "store/test_candidate_search.py",
    "store/test_graph_rows.py",
    "store/test_job_queue.py",
    "store/test_keys.py",
    "store/test_past_owners.py",
    "store/test_unit_store.py",
    "contract/test_bad_input.py",
    "cli/test_cli.py",
    "cli/test_cli_first_hour.py",
    "engine/test_close_while_searching.py",
    "index/test_dense_index.py",
    "test_docs.py",
    "core/test_embedding_text.py",
    "engine/retrieval/test_fast_packing.py",
    "engine/test_flush.py",
    "core/test_fusion.py",
    "engine/test_governance.py",
    "engine/writer/test_group_commit.py",
    "core/test_hardening.py",
    "engine/test_hardening_governance.py",
    "engine/ingest/test_import_export.py",
    "engine/ingest/test_import_mem0.py",
    "index/test_incremental_indexes.py",
    "engine/test_listing.py",
    "core/test_memory.py",
    "engine/test_trust.py",
    "engine/ingest/test_put.py",
    "core/test_fencing.py",
    "engine/ingest/test_novelty.py",
    "contract/test_providers_and_settings.py",
    "engine/retrieval/test_pyramid.py",
    "core/test_query_words.py",
    "engine/retrieval/test_reranker.py",
    "test_results.py",
    "engine/retrieval/test_retrieval_identical.py",
    "engine/retrieval/test_signals.py",
    "index/test_sparse_index.py",
    "store/test_store.py",
    "engine/ingest/test_summary_fits.py",
    "core/test_timeparse.py",
    "core/test_tokens.py",
    "engine/retrieval/test_top_k.py",
})

EMBEDDED = {"memory", "path", "sqlite-memory", "sqlite-file"}  # the engine / backend params kept
PARAMS = ("engine", "shared_engine", "backend")  # the fixtures that choose an engine or a storage backend


def is_fast(path: Path, params: dict[str, object], slow: bool) -> bool:
    """Whether one collected test belongs to the fast subset."""
    try:
        relative = path.resolve().relative_to(TESTS).as_posix()
    except ValueError:
        return False
    if slow or relative not in FAST_FILES:
        return False
    return all(params[name] in EMBEDDED for name in PARAMS if name in params)
