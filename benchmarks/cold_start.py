"""Where a cold ``omnimem search`` spends its time, phase by phase, in a fresh process.

    python -m benchmarks cold-start STORE "query" [--repeats 5]

Runs itself in a child process per repeat (so nothing is warm but the OS page
cache) and prints the median of each phase as JSON: interpreter start to
``import omnimem.cli``, opening the store (indexes loaded), the first query
embedding (model load included), and the rest of the first search.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence

CHILD = r"""
import json, sys, time
t0 = time.perf_counter()
import omnimem.cli  # what the CLI imports before it runs a command
t1 = time.perf_counter()
from omnimem import Memory
mem = Memory(sys.argv[1])
t2 = time.perf_counter()
mem.embedder.embed(["warm up"])
t3 = time.perf_counter()
ctx = mem.search(sys.argv[2])
t4 = time.perf_counter()
mem.close()
print(json.dumps({"import_s": t1 - t0, "open_s": t2 - t1, "embedder_load_s": t3 - t2,
                  "first_search_s": t4 - t3, "hits": len(ctx.hits), "embedder": mem.embedder.name}))
"""


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks cold-start", description=__doc__.splitlines()[0])
    parser.add_argument("store")
    parser.add_argument("query")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    store, query, repeats = args.store, args.query, args.repeats
    runs = []
    for _ in range(repeats):
        start = time.perf_counter()
        out = subprocess.run([sys.executable, "-c", CHILD, store, query], capture_output=True, text=True, check=True)
        run = json.loads(out.stdout)
        run["process_wall_s"] = time.perf_counter() - start
        runs.append(run)
    keys = [k for k in runs[0] if k.endswith("_s")]
    print(json.dumps({"embedder": runs[0]["embedder"], "repeats": repeats,
                      **{k: round(statistics.median(r[k] for r in runs), 3) for k in keys}}, indent=2))


if __name__ == "__main__":
    main()
