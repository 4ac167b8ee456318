"""The retrieval group's commands: ``locomo``, ``memgallery``, ``longmemeval`` (a thin shell over the harness's
retrieval run) and the group's script benchmarks (:data:`SCRIPTS`).

Mounted on the benchmark app by :mod:`benchmarks.cli` through :func:`register`.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from benchmarks.harness.commands import add_scripts
from benchmarks.harness.paths import data_dir, default_cache
from omnimem.errors import OmnimemError

if TYPE_CHECKING:
    from benchmarks.harness.retrieval import System

DataDirOpt = Annotated[
    Path | None,
    typer.Option("--data-dir", help="Benchmark data folder (default: $OMNIMEM_DATA_DIR or ../shared/data)."),
]
RetrievalOpt = Annotated[bool, typer.Option("--retrieval", help="Measure evidence recall of retrieval (no LLM).")]
QaOpt = Annotated[bool, typer.Option("--qa", help="Answer the questions with the configured LLM and score them.")]
ConversationsOpt = Annotated[
    int | None, typer.Option("--conversations", min=1, help="Only the first N conversations (quick runs).")
]
OutOpt = Annotated[Path, typer.Option("--out", help="Folder for <name>.json and the README of tables.")]
VariantsOpt = Annotated[
    str,
    typer.Option(
        "--variants",
        help="Comma-separated systems, or a group: default (baselines + ablations), experiments, all.",
    ),
]
SplitOpt = Annotated[
    str,
    typer.Option("--split", help="dev: first half of the conversations (defaults are chosen there); test: the "
                 "second half (the headline); all."),
]
EmbedderOpt = Annotated[str, typer.Option("--embedder", help="Embedder for every system (e.g. fake for a smoke run).")]
UrlOpt = Annotated[str | None, typer.Option(
    "--url", help="Run omnimem on PostgreSQL: a server URL on which databases may be created (one per "
    "conversation, dropped after), or 'pgserver' to start a private one for the run. Default: in memory.")]


EmbedCacheOpt = Annotated[str | None, typer.Option(
    "--embed-cache", help="File of vectors kept between runs, keyed by model and text hash (every system of a "
    "run reads it alike). Default: $OMNIMEM_BENCH_EMBED_CACHE; for longmemeval ~/.cache/omnimem/bench-vectors.npz.")]
NameOpt = Annotated[str | None, typer.Option(
    "--name", help="File name (without .json) instead of the one made from the options (experiment runs).")]
LimitOpt = Annotated[int | None, typer.Option(
    "--limit", min=1, help="Only N questions, taken round-robin over the question types (file order within each).")]




PlannerOpt = Annotated[str | None, typer.Option(
    "--planner", help="Also measure every omnimem system with Memory.search(planner=...): offline, llm, or both "
    "comma-separated (a twin row '<system>+<planner>' over the same store; llm uses the configured model).")]


def choose_systems(spec: str, planners: str | None = None) -> list[System]:
    """Resolve ``--variants`` into systems, in the order asked.

    A part ``key=value`` (several joined by ``+``) is the defaults with those ``Memory`` settings, named
    ``x-key=value``; ``planners`` adds a twin of every omnimem system searching with each planner.
    """
    from benchmarks.harness.retrieval import MemorySystem
    from benchmarks.harness.systems import groups as system_groups

    groups = system_groups()
    by_name = {s.name: s for s in groups["all"]}
    chosen: dict[str, System] = {}
    for part in (p.strip() for p in spec.split(",") if p.strip()):
        if "=" in part:
            settings = dict(item.split("=", 1) for item in part.split("+"))
            chosen["x-" + part] = MemorySystem("x-" + part, f"defaults with {', '.join(part.split('+'))}", settings)
        elif part in groups:
            chosen.update((s.name, s) for s in groups[part])
        elif part in by_name:
            chosen[part] = by_name[part]
        else:
            known = ", ".join([*groups, *by_name])
            raise typer.BadParameter(f"unknown variant {part!r}; known: {known}", param_hint="--variants")
    if not chosen:
        raise typer.BadParameter("no variant chosen", param_hint="--variants")
    systems = list(chosen.values())
    for planner in (p.strip() for p in (planners or "").split(",") if p.strip()):
        if planner not in ("offline", "llm"):
            raise typer.BadParameter(f"unknown planner {planner!r}; known: offline, llm", param_hint="--planner")
        systems += [MemorySystem(f"{s.name}+{planner}", f"{s.description}, searched with planner={planner}",
                                 s.settings, {**s.search, "planner": planner})
                    for s in list(chosen.values()) if isinstance(s, MemorySystem)]
    return systems


def result_name(benchmark: str, variants: str, conversations: int | None, embedder: str, split: str = "all") -> str:
    tag = variants if variants in ("default", "lean", "baselines", "experiments", "graph", "images", "all") else "custom"
    plain = "lean" if benchmark == "longmemeval" else "default"  # each command's own default set
    name = f"{benchmark}-retrieval-{split}" + ("" if tag == plain else f"-{tag}")
    if conversations is not None:
        name += f"-first{conversations}"
    if embedder != "all-MiniLM-L6-v2":
        name += f"-{embedder}"
    return name


def command_line(benchmark: str, args: Sequence[str]) -> str:
    return " ".join(["python", "-m", "benchmarks", benchmark, *args])


def _run(
    benchmark: str, retrieval: bool, qa: bool, data: Path | None, conversations: int | None, out: Path,
    variants: str, embedder: str, split: str = "test", url: str | None = None, embed_cache: str | None = None,
    name: str | None = None, planner: str | None = None,
) -> None:
    # e.g. /tmp/vectors.npz: faster repeated runs; LongMemEval keeps one by default (46k texts a split)
    cache_file = embed_cache or os.environ.get("OMNIMEM_BENCH_EMBED_CACHE") or (
        str(default_cache()) if benchmark == "longmemeval" else None)
    if qa:
        from benchmarks.retrieval.qa import run_qa
        from omnimem.embed import create_embedder
        from omnimem.llm import resolve_llm

        try:
            llm = resolve_llm()
            if llm is None:
                typer.echo("error: --qa needs an LLM; set OMNIMEM_LLM_MODEL (and OMNIMEM_LLM_BASE_URL) first", err=True)
                raise typer.Exit(2)
            path = run_qa(benchmark, data_dir(data), llm, create_embedder(embedder), out, limit=conversations,
                          progress=lambda line: typer.echo(line, err=True))
        except OmnimemError as exc:
            typer.echo(f"error: {' '.join(str(exc).split())}", err=True)
            raise typer.Exit(1 if exc.status >= 500 else 2) from None
        typer.echo(f"wrote {path}")
        if not retrieval:
            return
    if not retrieval:
        typer.echo("error: choose what to measure: --retrieval", err=True)
        raise typer.Exit(2)
    from benchmarks.harness import report
    from benchmarks.harness.retrieval import SPLITS, CachedEmbedder, locomo_dataset, memgallery_dataset, run
    from benchmarks.harness.retrieval import split as take_split
    from omnimem.embed import create_embedder

    if split not in SPLITS:
        raise typer.BadParameter(f"choose one of {', '.join(SPLITS)}", param_hint="--split")
    systems = choose_systems(variants, planner)
    folder = data_dir(data)
    try:
        if benchmark == "longmemeval":
            from benchmarks.retrieval.longmemeval import longmemeval_dataset

            dataset = longmemeval_dataset(folder / "longmemeval", split, limit=conversations)
        else:
            if benchmark == "locomo":
                dataset = locomo_dataset(folder / "locomo" / "locomo10.json")
            else:
                dataset = memgallery_dataset(folder / "memgallery")
            dataset = take_split(dataset, split)
            dataset.conversations = dataset.conversations[:conversations]
        cache = CachedEmbedder(create_embedder(embedder), Path(cache_file) if cache_file else None)
        typer.echo(f"{benchmark}: {len(dataset.conversations)} conversations, {dataset.questions()} QA, "
                   f"{len(systems)} systems", err=True)
        progress = lambda line: typer.echo(line, err=True)  # noqa: E731
        from benchmarks.harness.backends import database_server

        with database_server(url) as databases:
            result = run(dataset, systems, cache, progress=progress, databases=databases)
        cache.save()
    except OmnimemError as exc:
        typer.echo(f"error: {' '.join(str(exc).split())}", err=True)
        raise typer.Exit(2) from None
    args = ["--retrieval", "--split", split] if benchmark != "longmemeval" else ["--split", split]
    if conversations is not None:
        args += ["--limit" if benchmark == "longmemeval" else "--conversations", str(conversations)]
    if variants != ("lean" if benchmark == "longmemeval" else "default"):
        args += ["--variants", variants]
    if embedder != "all-MiniLM-L6-v2":
        args += ["--embedder", embedder]
    if planner is not None:
        args += ["--planner", planner]
    if url is not None:  # a server's own URL may hold a password: the command records where, not how
        args += ["--url", url if url == "pgserver" else "postgresql://..."]
    if name is not None:
        args += ["--name", name]
    else:
        name = result_name(benchmark, variants, conversations, embedder, split) + ("-postgresql" if url else "") + (
            f"-planner-{planner.replace(',', '-')}" if planner else "")
    path = report.write(result, out, name, command=command_line(benchmark, args), embedder=cache.name)
    shown = ("1k", "6k", "s_any@5", "s_all@10", "t_recall@10", "t_ndcg@10") if benchmark == "longmemeval" else \
        ("@20", "1k", "6k", "hits_1k", "hits_6k", "over_6k")
    for r in result.systems:
        o = r.summary(dataset.categories)["overall"]
        typer.echo(f"{r.system.name:28s} " + " ".join(f"{m} {o[m]:.3f}" for m in shown))
    typer.echo(f"wrote {path} ({result.seconds:.0f} s)")


PANEL = "Retrieval: evidence recall, QA, what retrieval options cost"
SCRIPTS = {  # command -> (module with main(argv), one-line help)
    "parallel-qa": ("benchmarks.retrieval.parallel_qa", "Question answering throughput with 1-8 workers over a "
                    "fixed-latency fake LLM (writes parallel-qa.json, parallel-qa.md)."),
    "targets": ("benchmarks.retrieval.targets", "The retrieval targets against the final test-split result files: "
                "figure, gap, bootstrap interval (writes retrieval-targets.json, .md)."),
    "report": ("benchmarks.harness.report", "Regenerate results/README.md and the archive's index [FOLDER]."),
    "current": ("benchmarks.harness.figures", "Regenerate CURRENT.md's tables from the figures declared in "
                "harness/figures.py [--check] [FOLDER]."),
    "query-embedder": ("benchmarks.retrieval.query_embedder", "Whether the int8 ONNX MiniLM can embed queries for a "
                       "store built with the torch MiniLM, on LoCoMo (writes query-embedder.json, .md)."),
    "rerank-cost": ("benchmarks.retrieval.rerank_cost", "What reranker= costs per search, with a cross-encoder of "
                    "MiniLM-L6's size and random weights: --store S --size N (writes rerank-cost.json, .md)."),
    "planner-cost": ("benchmarks.retrieval.planner_cost", "What a retrieval planner (offline, or llm over a fake "
                     "model) costs per search on a synthetic store: --size N (writes planner-cost.json, .md)."),
    "packing-cost": ("benchmarks.retrieval.packing_cost", "What time stamps cost: turns per 1,000 tokens of each "
                     "rendering against a plain list, two synthetic chats: --out FILE (writes FILE and its .md)."),
    "ranker-train": ("benchmarks.retrieval.ranker_train", "Train the learnt ranking (ranking=\"learnt\") on the dev "
                     "splits; validate it on held-out conversations (writes the packaged ranker.json and "
                     "ranker-train.json, .md)."),
    "retrieval-kernels": ("benchmarks.retrieval.retrieval_kernels", "Whether search results change under other CPU "
                          "kernels (FAISS, numpy, OpenBLAS, threads) (writes retrieval-kernels.json, .md)."),
    "poisoning": ("benchmarks.retrieval.poisoning", "Planted instructions, keyword-stuffed text and near-duplicates "
                  "in LoCoMo: how often they reach the context of unrelated questions and the evidence they push "
                  "out, with and without the defences (writes poisoning.json, poisoning.md)."),
}


def register(app: typer.Typer) -> None:
    """Add the ``locomo``, ``memgallery`` and ``longmemeval`` commands and :data:`SCRIPTS` to ``app``."""

    @app.command(rich_help_panel=PANEL)
    def locomo(
        retrieval: RetrievalOpt = False,
        qa: QaOpt = False,
        data_dir: DataDirOpt = None,
        conversations: ConversationsOpt = None,
        out: OutOpt = Path("benchmarks/results"),
        variants: VariantsOpt = "default",
        embedder: EmbedderOpt = "all-MiniLM-L6-v2",
        split: SplitOpt = "test",
        url: UrlOpt = None,
        embed_cache: EmbedCacheOpt = None,
        name: NameOpt = None,
        planner: PlannerOpt = None,
    ) -> None:
        """LoCoMo (10 conversations, 1,986 QA): evidence recall of retrieval (dev: 1-5, test: 6-10)."""
        _run("locomo", retrieval, qa, data_dir, conversations, out, variants, embedder, split, url, embed_cache, name,
             planner)

    @app.command(rich_help_panel=PANEL)
    def memgallery(
        retrieval: RetrievalOpt = False,
        qa: QaOpt = False,
        data_dir: DataDirOpt = None,
        conversations: ConversationsOpt = None,
        out: OutOpt = Path("benchmarks/results"),
        variants: VariantsOpt = "default",
        embedder: EmbedderOpt = "all-MiniLM-L6-v2",
        split: SplitOpt = "test",
        url: UrlOpt = None,
        embed_cache: EmbedCacheOpt = None,
        name: NameOpt = None,
        planner: PlannerOpt = None,
    ) -> None:
        """Mem-Gallery (20 files, 1,711 QA; images through their captions): evidence recall of retrieval
        (dev: the first 10 files by name, test: the last 10)."""
        _run("memgallery", retrieval, qa, data_dir, conversations, out, variants, embedder, split, url, embed_cache,
             name, planner)

    @app.command(rich_help_panel=PANEL)
    def longmemeval(
        split: Annotated[str, typer.Option("--split", help="dev or test (100 questions each; abstention "
                                           "questions skipped), or all.")] = "test",
        limit: LimitOpt = None,
        data_dir: DataDirOpt = None,
        out: OutOpt = Path("benchmarks/results"),
        variants: VariantsOpt = "lean",
        embedder: EmbedderOpt = "all-MiniLM-L6-v2",
        url: UrlOpt = None,
        embed_cache: EmbedCacheOpt = None,
        name: NameOpt = None,
        planner: PlannerOpt = None,
    ) -> None:
        """LongMemEval-S (one haystack of ~490 turns per question, each under its own user id): visible-evidence
        recall within 1,000 / 6,000 tokens, session recall_any / recall_all @5 / @10, turn recall@10 and NDCG@10."""
        _run("longmemeval", True, False, data_dir, limit, out, variants, embedder, split, url, embed_cache, name,
             planner)

    add_scripts(app, SCRIPTS, PANEL)
