"""Embedding calls with their batches on one thread or on two, interleaved in one run.

``MiniLMEmbedder(parallel=1)`` runs a call's length-sorted batches one after
the other (torch's own threads share each batch); ``parallel=2`` (the default)
runs them on two threads at once. Each round times, for both: one text (a
lone add or a query), a burst's 24 short texts (the writer's group commit
embeds them in one call) and 200 texts (an ingest). Rounds interleave the two
so machine load hits both alike; read the ratios, measured in the same run.

    python -m benchmarks embed-parallel [--rounds 12] [--out benchmarks/results]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import time
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from benchmarks.harness import synthetic
from omnimem.embed import MiniLMEmbedder

SIZES = (1, 24, 200)


def run(rounds: int) -> dict[str, Any]:
    rng = random.Random(7)

    def texts(n: int, tag: str) -> list[str]:
        return [f"{synthetic.turn_text(rng, rng.sample(synthetic.NOUNS, 3), datetime(2023, 2, 1))} ({tag}.{i})"
                for i in range(n)]

    models = {"in turn": MiniLMEmbedder(parallel=1), "two at once": MiniLMEmbedder(parallel=2)}
    for model in models.values():
        model.embed(texts(4, "warm"))
    times: dict[str, dict[int, list[float]]] = {name: {n: [] for n in SIZES} for name in models}
    for r in range(rounds):
        for n in SIZES:
            batch = texts(n, f"{r}")  # the same texts for both, new ones each round
            for name in (list(models) if r % 2 == 0 else list(reversed(models))):
                start = time.perf_counter()
                models[name].embed(batch)
                times[name][n].append((time.perf_counter() - start) * 1000)
    medians = {name: {n: round(statistics.median(v), 2) for n, v in by.items()} for name, by in times.items()}
    return {
        "command": f"python -m benchmarks embed-parallel --rounds {rounds}",
        "when": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "machine": f"{os.cpu_count()} CPU cores (shared), {platform.python_implementation()} "
                   f"{platform.python_version()}, 1-minute load average {os.getloadavg()[0]:.1f} at the end",
        "rounds": rounds, "p50_ms": medians,
        "two_over_one": {n: round(medians["two at once"][n] / medians["in turn"][n], 3) for n in SIZES},
        "burst_over_one_text": {name: round(m[24] / m[1], 2) for name, m in medians.items()},
    }


def table(result: dict[str, Any]) -> str:
    m = result["p50_ms"]
    lines = [
        "# embed-parallel: a call's batches on one thread or two", "",
        f"Command: `{result['command']}` ({result['when']}; {result['machine']}).", "",
        "| texts in the call | batches in turn p50 ms | two at once p50 ms | at once / in turn |", "|---:|---:|---:|---:|",
        *(f"| {n} | {m['in turn'][n]} | {m['two at once'][n]} | {result['two_over_one'][n]} |" for n in SIZES),
        "", "A burst's 24 texts against one text, per setting: "
        + ", ".join(f"{name} {ratio}x" for name, ratio in result["burst_over_one_text"].items()) + ".", ""]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks embed-parallel",
                                     description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rounds", type=int, default=12)
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results"))
    args = parser.parse_args(argv)
    result = run(args.rounds)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "embed-parallel.json").write_text(json.dumps(result, indent=2) + "\n")
    (args.out / "embed-parallel.md").write_text(table(result))
    print(table(result))


if __name__ == "__main__":
    main()
