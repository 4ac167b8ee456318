"""Parallel question answering: queries/second with 1, 2, 4 and 8 workers.

The answering model is omnimem's FakeLLM with a fixed latency (default 300 ms),
so the figure shows how well the pipeline (embedding the question, hybrid
search, pyramid packing, the model call) overlaps, not how fast a model is.
Retrieval is real: all-MiniLM-L6-v2 over LoCoMo conversation conv-26.

    python -m benchmarks parallel-qa [--latency 0.3] [--questions 48] [--out benchmarks/results]

Writes parallel-qa.json (raw) and parallel-qa.md (table) under --out.
The paper's anchor: 1.05 q/s with 1 worker, 5.81 q/s with 8.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import tempfile
import time
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path

from omnimem import Memory, __version__
from omnimem.contract.loaders import load_locomo
from omnimem.llm import FakeLLM


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks parallel-qa", description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=0.3)
    parser.add_argument("--questions", type=int, default=48)
    parser.add_argument("--workers", default="1,2,4,8")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--data-dir", default=os.environ.get("OMNIMEM_DATA_DIR", "../shared/data"))
    parser.add_argument("--out", default="benchmarks/results")
    args = parser.parse_args(argv)

    locomo = Path(args.data_dir) / "locomo" / "locomo10.json"
    questions = [q["question"] for q in json.loads(locomo.read_text())[0]["qa"]][: args.questions]
    llm = FakeLLM("A short answer.", latency=args.latency)
    rows = []
    with tempfile.TemporaryDirectory() as tmp, Memory(Path(tmp) / "mem", llm=llm) as mem:
        for d in load_locomo(locomo, conversation="conv-26"):
            mem.add_dialogue(d.turns, user_id=d.user_id, session_id=d.session_id)
        mem.ask_many(questions[:4], workers=4)  # warm up: model loaded, BM25 built
        for workers in [int(w) for w in args.workers.split(",")]:
            rates = []
            for _ in range(args.rounds):
                started = time.perf_counter()
                answers = mem.ask_many(questions, workers=workers, user_id="conv-26")
                elapsed = time.perf_counter() - started
                assert all(a.answer == "A short answer." for a in answers)
                rates.append(len(questions) / elapsed)
            rows.append({"workers": workers, "qps_median": round(statistics.median(rates), 3),
                         "qps_rounds": [round(r, 3) for r in rates]})
            print(f"{workers} worker(s): {rows[-1]['qps_median']} q/s")
    result = {
        "benchmark": "parallel-qa",
        "command": "python -m benchmarks parallel-qa " + " ".join(
            f"--{k.replace('_', '-')} {v}" for k, v in vars(args).items() if k not in ("data_dir", "out")),
        "config": {**vars(args), "embedder": "all-MiniLM-L6-v2", "conversation": "conv-26", "budget": 6000},
        "results": rows,
        "ceiling_qps_per_worker": round(1 / args.latency, 3),
        "anchor_paper": {"1": 1.05, "8": 5.81},
        "omnimem": __version__,
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "load_avg": os.getloadavg()},
        "date": datetime.now(timezone.utc).isoformat(),
    }
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "parallel-qa.json").write_text(json.dumps(result, indent=2) + "\n")
    table = ["| workers | q/s (median of rounds) | ideal (workers / latency) |", "|---|---|---|"]
    table += [f"| {r['workers']} | {r['qps_median']} | {round(r['workers'] / args.latency, 2)} |" for r in rows]
    (out / "parallel-qa.md").write_text(
        "# Parallel question answering\n\n"
        f"FakeLLM with a fixed {int(args.latency * 1000)} ms latency, real retrieval (all-MiniLM-L6-v2, "
        f"LoCoMo conv-26), {len(questions)} questions, {args.rounds} rounds. Paper anchor: 1.05 q/s with 1 "
        "worker, 5.81 with 8.\n\n" + "\n".join(table) + f"\n\nCommand: `{result['command']}`\n"
    )


if __name__ == "__main__":
    main()
