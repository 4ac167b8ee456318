"""The reliability group's commands (mounted by :mod:`benchmarks.cli` through :func:`register`)."""

from __future__ import annotations

import typer

from benchmarks.harness.commands import add_scripts

PANEL = "Reliability and isolation"
SCRIPTS = {
    "reliability": ("benchmarks.reliability.reliability", "The reliability tests at nightly (or --mode ci) sizes, "
                    "with their numbers (writes reliability.json, RELIABILITY.md)."),
    "dialogue-stall": ("benchmarks.reliability.dialogue_stall", "Another user's add p50/p95 during a 20,000-turn "
                       "dialogue through omnimem serve, against its lone p95 (writes dialogue-stall.json, "
                       "RELIABILITY.md)."),
    "ingest-race": ("benchmarks.reliability.ingest_race", "2-4 processes ingesting one file into one store at once: "
                    "duplicated turns, CLI and Python API (writes ingest-race.json, RELIABILITY.md)."),
    "time-fuzz": ("benchmarks.reliability.time_fuzz", "Relative times against a now from year 1 to 9999 through "
                  "omnimem serve on SQLite and PostgreSQL: 5xx and broken connections (writes time-fuzz.json)."),
    "scope-probe": ("benchmarks.reliability.scope_probe", "Adversarial scope probe over the embedded store and "
                    "PostgreSQL: LangGraph label spellings, import id takeover over HTTP, unscoped retriever (writes "
                    "scope-probe.json, SECURITY.md)."),
    "hostile-model": ("benchmarks.reliability.hostile_model", "A hostile model endpoint: a planned search and an "
                      "enrichment parse given 1 MB replies, 5xx over every malformed reply on HTTP, MCP and CLI, "
                      "threads of calls abandoned at the deadline (writes hostile-model.json, hostile-model.md)."),
    "import-safety": ("benchmarks.reliability.import_safety", "Imports with a NUL in their last record and imports "
                      "after a forget, on SQLite and PostgreSQL: half-stored imports, forgotten units back (writes "
                      "import-safety.json)."),
    "redaction": ("benchmarks.reliability.redaction", "redact_pii: precision, recall and leak rate per kind of "
                  "personal data on a seeded synthetic set, and the cost per add (writes redaction.json, .md)."),
}  # command -> (module with main(argv), one-line help)


def register(app: typer.Typer) -> None:
    """Add :data:`SCRIPTS` to ``app``."""
    add_scripts(app, SCRIPTS, PANEL)
