"""``python -m benchmarks perf``: speed, memory and scale (mounted by :mod:`benchmarks.cli`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer


def register(app: typer.Typer) -> None:
    """Add ``perf`` to ``app``."""

    @app.command()
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
        from benchmarks.perf import run_sizes

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
