"""Default-retrieval latency of two checkouts on the same store, interleaved: the before/after ratio.

On a shared machine absolute timings move with the load; running the code before a change and
after it in alternating processes on copies of the same store gives a ratio both saw alike::

    python -m benchmarks latency-ab --store STORE --size 100000 --embedder synthetic \\
        --before /path/to/old/checkout --after . --out benchmarks/results/archive/latency-ab-100000.json

Wall-clock p50 and the searching thread's CPU time p50 (``time.process_time``, every thread of the process, which the load
changes least) are both reported. Each side runs in its own process (``PYTHONPATH`` = that checkout) on its own copy of the store
(each keeps its own index files), ``--pairs`` times, alternating; a process opens the store,
searches every query once (warm-up), then times ``--rounds`` passes (query vectors precomputed).
Uses only ``Memory.search``, so any checkout with the same facade can be measured.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path

from benchmarks.harness.paths import ROOT

CHILD = """
import json, sys, time, statistics
from pathlib import Path
import omnimem  # the checkout's (the only folder on PYTHONPATH)
sys.path.insert(0, sys.argv[7])  # then this checkout's benchmarks package, the same for both sides
from benchmarks.harness.perf import TimedEmbedder, make_embedder
from benchmarks.harness.synthetic import queries
from omnimem import Memory
store, size, kind, n, rounds, scoped = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), sys.argv[6] == "1"
inner = make_embedder(kind)
qs = queries(n, size, 1)
emb = TimedEmbedder(inner, dict(zip([q for q, _ in qs], inner.embed([q for q, _ in qs]))))
start = time.perf_counter()
m = Memory(Path(store), embedder=emb)
m.search(qs[0][0])
opened = time.perf_counter() - start
for q, u in qs:
    m.search(q, user_id=u if scoped else None)
lat, cpu = [], []
for _ in range(rounds):
    for q, u in qs:
        t, c = time.perf_counter(), time.process_time()
        m.search(q, user_id=u if scoped else None)
        cpu.append(time.process_time() - c)
        lat.append(time.perf_counter() - t)
m.close()
lat.sort()
print(json.dumps({"p50_ms": round(statistics.median(lat) * 1000, 3), "p95_ms": round(lat[int(0.95 * len(lat))] * 1000, 3),
                  "cpu_p50_ms": round(statistics.median(cpu) * 1000, 3), "open_and_first_search_s": round(opened, 2)}))
"""


def run_side(checkout: Path, bench_root: Path, store: Path, args: argparse.Namespace, scoped: bool) -> dict[str, float]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(checkout)
    env.setdefault("OMNIMEM_CONFIG", os.devnull)
    # -P: the child must not import the working directory's omnimem instead of the checkout's; the benchmarks
    # package comes from bench_root after omnimem is imported (an older checkout's benchmarks may be laid out otherwise)
    done = subprocess.run([sys.executable, "-P", "-c", CHILD, str(store), str(args.size), args.embedder,
                           str(args.queries), str(args.rounds), "1" if scoped else "0", str(bench_root)],
                          check=True, capture_output=True, text=True, env=env)
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks latency-ab",
                                     description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--store", type=Path, required=True)
    parser.add_argument("--size", type=int, required=True, help="the size the store was built with (for the queries)")
    parser.add_argument("--embedder", default="synthetic")
    parser.add_argument("--before", type=Path, required=True)
    parser.add_argument("--after", type=Path, default=Path("."))
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    bench_root = ROOT  # this checkout's benchmarks package, for both sides
    copies = {}
    for side in ("before", "after"):
        copies[side] = args.store.parent / f"{args.store.name}.ab-{side}"
        shutil.rmtree(copies[side], ignore_errors=True)
        shutil.copytree(args.store, copies[side], ignore=shutil.ignore_patterns("index"))  # each builds its own
    load_before = os.getloadavg()
    runs: dict[str, list[dict[str, float]]] = {"before_global": [], "after_global": [], "before_user": [],
                                               "after_user": []}
    for _ in range(args.pairs):
        for scoped in (False, True):
            for side in ("before", "after"):
                key = f"{side}_{'user' if scoped else 'global'}"
                runs[key].append(run_side(getattr(args, side).resolve(), bench_root, copies[side], args, scoped))
    for path in copies.values():
        shutil.rmtree(path, ignore_errors=True)
    med = {key: statistics.median(r["p50_ms"] for r in vals) for key, vals in runs.items()}
    cpu = {key: statistics.median(r["cpu_p50_ms"] for r in vals) for key, vals in runs.items()}
    doc = {
        "benchmark": "python -m benchmarks latency-ab",
        "command": " ".join(["python -m benchmarks latency-ab", *(argv if argv is not None else sys.argv[1:])]),
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "size": args.size, "embedder": args.embedder, "before": str(args.before), "after": str(args.after),
        "median_p50_ms": med,
        "speedup_global": round(med["before_global"] / med["after_global"], 2),
        "speedup_user": round(med["before_user"] / med["after_user"], 2),
        "median_cpu_p50_ms": cpu,  # CPU time of the process (all its threads): what the load changes least
        "cpu_speedup_global": round(cpu["before_global"] / cpu["after_global"], 2),
        "cpu_speedup_user": round(cpu["before_user"] / cpu["after_user"], 2),
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in os.getloadavg()], "runs": runs,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    print(args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
