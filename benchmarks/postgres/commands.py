"""The PostgreSQL group's commands (mounted by :mod:`benchmarks.cli` through :func:`register`)."""

from __future__ import annotations

import typer

from benchmarks.harness.commands import add_scripts

PANEL = "PostgreSQL"
SCRIPTS = {
    "pg-scale": ("benchmarks.postgres.pg_scale", "PostgreSQL beside the embedded backend at one size: ingest, HNSW "
                 "build, search p50/p95, recall@20 (writes postgres/pg-scale-<size>.json and .md)."),
    "pg-text-sql": ("benchmarks.postgres.pg_text_sql", "BM25 in PostgreSQL before and after term_df, same store and "
                    "queries, interleaved (writes postgres/pg-text-sql-<size>.json and .md)."),
    "pg-ingest-cost": ("benchmarks.postgres.pg_ingest_cost", "add_dialogue on PostgreSQL with and without the HNSW "
                       "index, alternating (writes pg-ingest-cost.json and .md)."),
}  # command -> (module with main(argv), one-line help)


def register(app: typer.Typer) -> None:
    """Add :data:`SCRIPTS` to ``app``."""
    add_scripts(app, SCRIPTS, PANEL)
