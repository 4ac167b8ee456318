"""The benchmark commands, one typer app: ``python -m benchmarks <command>``.

``register`` adds them to any typer app; ``omnimem bench`` mounts them through it when this
package is importable (a source checkout). Retrieval and perf are typer commands; the other
benchmarks are scripts with their own argparse options, passed through unchanged
(``python -m benchmarks media --help`` shows them).
"""

from __future__ import annotations

import importlib

import typer

from benchmarks import commands_perf, commands_retrieval

SCRIPTS = {  # command -> (module with main(argv), one-line help)
    "media": ("benchmarks.media_bench", "Media filters against known ground truth: scene cuts, VAD, "
              "transcription, storage (writes media.json, MEDIA.md)."),
    "parallel-qa": ("benchmarks.parallel_qa", "Question answering throughput with 1-8 workers over a "
                    "fixed-latency fake LLM (writes parallel-qa.json, parallel-qa.md)."),
    "reliability": ("benchmarks.reliability", "The reliability tests at nightly (or --mode ci) sizes, with "
                    "their numbers (writes reliability.json, RELIABILITY.md)."),
    "dialogue-stall": ("benchmarks.dialogue_stall", "Another user's add p50/p95 during a 20,000-turn dialogue "
                       "through omnimem serve, against its lone p95 (writes dialogue-stall.json, RELIABILITY.md)."),
    "ingest-race": ("benchmarks.ingest_race", "2-4 processes ingesting one file into one store at once: duplicated "
                    "turns, CLI and Python API (writes ingest-race.json, RELIABILITY.md)."),
    "cold-start": ("benchmarks.cold_start", "Where a cold 'omnimem search' spends its time, by phase: [STORE QUERY] "
                   "[--repeats 5]."),
    "serve-load": ("benchmarks.serve_load", "Loopback HTTP load test of omnimem serve: --clients 32 --seconds 60, "
                   "80% search / 20% add (writes serve-load.json, serve-load.md)."),
    "pg-scale": ("benchmarks.pg_scale", "PostgreSQL beside the embedded backend at one size: ingest, HNSW "
                 "build, search p50/p95, recall@20 (writes postgres/pg-scale-<size>.json and .md)."),
    "pg-text-sql": ("benchmarks.pg_text_sql", "BM25 in PostgreSQL before and after term_df, same store and "
                    "queries, interleaved (writes postgres/pg-text-sql-<size>.json and .md)."),
    "pg-ingest-cost": ("benchmarks.pg_ingest_cost", "add_dialogue on PostgreSQL with and without the HNSW "
                       "index, alternating (writes postgres/pg-ingest-cost.json and .md)."),
    "enrich": ("benchmarks.enrich_latency", "Add latency with an LLM answering after 1 s: the synchronous part, "
               "time until enriched, queue throughput with 1-4 workers (writes enrich.json, enrich.md)."),
    "search-speed": ("benchmarks.search_speed", "Search latency, q/s with 1 and 2 threads, first search after a "
                     "write, default vs paper retrieval: --size N --embedder minilm|synthetic."),
    "latency-ab": ("benchmarks.latency_ab", "Default-retrieval latency of two checkouts on copies of one store, "
                   "interleaved: --store S --size N --before OLD --after NEW --out FILE."),
    "search-profile": ("benchmarks.search_profile", "The share of a default search outside the GIL (FAISS, SQLite, "
                       "tiktoken) and the 2-thread q/s it allows: --store S --size N (writes search-profile-<n>.json)."),
    "search-stages": ("benchmarks.search_stages", "A default search's CPU time by stage (index, signals, row reads, "
                      "packing) at 6,000 and 1,000 tokens: --store S --size N (writes search-stages-<n>.json)."),
    "rerank-cost": ("benchmarks.rerank_cost", "What reranker= costs per search, with a cross-encoder of MiniLM-L6's "
                    "size and random weights: --store S --size N (writes rerank-cost.json, .md)."),
    "query-embedder": ("benchmarks.query_embedder", "Whether the int8 ONNX MiniLM can embed queries for a store "
                       "built with the torch MiniLM, on LoCoMo (writes query-embedder.json, .md)."),
    "graph-ingest": ("benchmarks.graph_ingest", "Ingest turns/s on LoCoMo with the knowledge graph off and on, "
                     "and the graph's own turns/s (writes graph-ingest.json, .md)."),
    "graph-snapshot": ("benchmarks.graph_snapshot", "The graph LoCoMo builds, without ids, to compare two versions "
                       "of the code for equality: --out FILE, or --compare A B."),
    "ingest-ratio": ("benchmarks.ingest_ratio", "Ingest turns/s against the raw embedder on the same LoCoMo "
                     "texts, per session and one add at a time (writes ingest-ratio.json, .md)."),
    "targets": ("benchmarks.targets", "The retrieval targets against the final test-split result files: figure, gap, "
                "bootstrap interval (writes retrieval-targets.json, .md)."),
    "time-fuzz": ("benchmarks.time_fuzz", "Relative times against a now from year 1 to 9999 through omnimem serve on "
                  "SQLite and PostgreSQL: 5xx and broken connections (writes time-fuzz.json)."),
    "scope-probe": ("benchmarks.scope_probe", "Adversarial scope probe over the embedded store and PostgreSQL: "
                    "LangGraph label spellings, import id takeover over HTTP, unscoped retriever (writes "
                    "scope-probe.json, SECURITY.md)."),
    "perf-table": ("benchmarks.perf_table", "Print the PERF.md table from perf-*.json [FOLDER]."),
    "report": ("benchmarks.report", "Regenerate results/README.md from the retrieval JSON files [FOLDER]."),
}
PASS_THROUGH = {"allow_extra_args": True, "ignore_unknown_options": True}


def _script_command(app: typer.Typer, name: str, module: str, help_text: str) -> None:
    @app.command(name, help=help_text, context_settings=PASS_THROUGH, add_help_option=False)
    def command(ctx: typer.Context) -> None:
        importlib.import_module(module).main(list(ctx.args))


def register(app: typer.Typer) -> None:
    """Add every benchmark command to ``app``."""
    commands_retrieval.register(app)
    commands_perf.register(app)
    for name, (module, help_text) in SCRIPTS.items():
        _script_command(app, name, module, help_text)


def build_app() -> typer.Typer:
    app = typer.Typer(help="omnimem benchmarks: retrieval quality (LoCoMo, Mem-Gallery), speed, media, "
                      "reliability. Run from the repository root.", no_args_is_help=True, add_completion=False)
    register(app)
    return app


def main() -> None:
    build_app()(prog_name="python -m benchmarks")
