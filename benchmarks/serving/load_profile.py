"""Where a search waits under serve-load's 32-client mixed load: py-spy samples of the server, by stage.

The server is started as serve-load starts it (:mod:`benchmarks.serving.serve_load`: a fresh store seeded with
500 synthetic turns, one worker, an API key); while the clients run, ``py-spy record`` samples every thread of
the server (``--idle``: waiting threads too, so a wait shows as the frame it waits in). The samples of the
threads running a search are then grouped by what the search was doing: waiting for the model gate
(:mod:`omnimem.embed.gate`), embedding its query (ONNX or torch), ranking and packing, making its answer; and
the writer's by embedding, waiting for searches, waiting for the gate. py-spy is not a dependency: give its
executable (``pip install py-spy`` in a virtual environment of its own).

    python -m benchmarks load-profile --py-spy /tmp/spy/bin/py-spy --seconds 25 --out ./profile.json
    python -m benchmarks load-profile --summarise RAW.txt --out ./profile.json   # a raw file recorded before
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

SEARCH = "search.<locals>.run"  # the route's function that a search thread runs
WRITE = "Ingestor._embed_yielding"  # where the writer embeds a group's texts
SEARCH_STAGES = (  # (stage, a frame that marks it), first match wins
    ("waits for the model gate", "ModelGate.query"),
    ("embeds its query (ONNX)", "Session.run"),
    ("embeds its query (torch)", "MiniLMEmbedder.embed"),
    ("makes its answer (to_dict, render)", "to_dict"),
    ("makes its answer (to_dict, render)", "Context.render"),
)
WRITE_STAGES = (
    ("waits for the searches in flight (yield_to_reads)", "yield_to_reads"),
    ("waits for the model gate", "ModelGate.passage"),
    ("embeds (torch)", "MiniLMEmbedder.embed"),
)


def stages(raw: Path) -> dict[str, Any]:
    """Samples of the search threads and of the writer's embedding, by stage, from a ``py-spy --format raw`` file."""
    search: Counter[str] = Counter()
    write: Counter[str] = Counter()
    for line in raw.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        n = int(count)
        if SEARCH in stack:
            search[next((name for name, mark in SEARCH_STAGES if mark in stack), "ranks and packs")] += n
        elif WRITE in stack:
            write[next((name for name, mark in WRITE_STAGES if mark in stack), "other")] += n

    def shares(counts: Counter[str]) -> dict[str, float]:
        total = sum(counts.values()) or 1
        return {name: round(n / total, 3) for name, n in counts.most_common()}

    return {"search_samples": sum(search.values()), "search": shares(search),
            "write_samples": sum(write.values()), "write": shares(write)}


def record(py_spy: str, seconds: float, raw: Path) -> dict[str, Any]:
    """Run the 32-client load against a fresh server while py-spy records it; the load's figures."""
    from benchmarks.harness import synthetic
    from benchmarks.harness.server import create_key, free_port
    from benchmarks.serving import serve_load
    from omnimem import Memory

    folder = Path(tempfile.mkdtemp(prefix="omnimem-load-profile-"))
    store = folder / "store"
    with Memory(store, embedder="all-MiniLM-L6-v2") as mem:
        for user, session, turns in synthetic.sessions(500):
            mem.add_dialogue(turns, user_id=user, session_id=session)
    key = create_key(["--store", str(store)], name="load", role="admin")
    questions = synthetic.queries(500, 500)
    port = free_port()
    server = serve_load._start_server(store, port, 1, "all-MiniLM-L6-v2")
    try:
        serve_load._one_at_a_time(port, key, questions[:20])  # model and indexes loaded before the load
        spy = subprocess.Popen([py_spy, "record", "--pid", str(server.pid), "--duration", str(int(seconds)),
                                "--rate", "200", "--idle", "--threads", "--format", "raw", "--nonblocking",
                                "--output", str(raw)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(1)
        load = os.getloadavg()[0]
        started = time.monotonic()
        tally = serve_load._load(port, key, 32, started + seconds, 0.3, synthetic.users_for(500), questions)
        wall = time.monotonic() - started
        spy.wait(timeout=120)
    finally:
        server.send_signal(signal.SIGINT)
        server.wait(timeout=60)
    p = serve_load._percentile
    return {"load_average_1min": {"before": round(load, 1), "end_of_load": round(os.getloadavg()[0], 1)},
            "requests_per_s": round((len(tally.search_ms) + len(tally.add_ms)) / wall, 1), "errors": len(tally.errors),
            "search": {"count": len(tally.search_ms), "p50_ms": p(tally.search_ms, 50), "p95_ms": p(tally.search_ms, 95)},
            "add": {"count": len(tally.add_ms), "p50_ms": p(tally.add_ms, 50), "p95_ms": p(tally.add_ms, 95)}}


def table(result: dict[str, Any]) -> str:
    lines = ["# load-profile: where a search waits under the 32-client mixed load", "",
             f"Command: `{result['command']}` ({result['when']}).", ""]
    load = result.get("load")
    if load:
        lines += [f"Load: {load['requests_per_s']} requests/s; search p50 / p95 {load['search']['p50_ms']} / "
                  f"{load['search']['p95_ms']} ms; add p50 / p95 {load['add']['p50_ms']} / {load['add']['p95_ms']} ms; "
                  f"1-minute load average {load['load_average_1min']['before']} before, "
                  f"{load['load_average_1min']['end_of_load']} at the end.", ""]
    s = result["stages"]
    lines += [f"Share of the search threads' samples ({s['search_samples']}):", "", "| stage | share |", "|---|---:|"]
    lines += [f"| {name} | {share} |" for name, share in s["search"].items()]
    lines += ["", f"Share of the writer's embedding samples ({s['write_samples']}):", "", "| stage | share |", "|---|---:|"]
    lines += [f"| {name} | {share} |" for name, share in s["write"].items()]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks load-profile", description=__doc__.split("\n")[0])
    parser.add_argument("--py-spy", help="the py-spy executable (records a new profile)")
    parser.add_argument("--seconds", type=float, default=25.0)
    parser.add_argument("--summarise", type=Path, help="a raw py-spy file recorded before, instead of a new run")
    parser.add_argument("--out", type=Path, required=True, help="JSON file (a .md table and the raw samples beside it)")
    args = parser.parse_args(argv)
    if (args.py_spy is None) == (args.summarise is None):
        parser.error("give --py-spy (record) or --summarise (a raw file)")
    given = sys.argv[1:] if argv is None else argv
    result: dict[str, Any] = {"benchmark": "load-profile", "command": "python -m benchmarks load-profile " + " ".join(given),
                              "when": datetime.now(timezone.utc).isoformat(timespec="seconds")}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    raw = args.summarise or args.out.with_suffix(".raw.txt")
    if args.py_spy:
        result["load"] = record(args.py_spy, args.seconds, raw)
    result["stages"] = stages(raw)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    args.out.with_suffix(".md").write_text(table(result))
    print(table(result))


if __name__ == "__main__":
    main()
