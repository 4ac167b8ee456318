"""omnimem beside the memory libraries users would pick instead (mem0, Chroma), one run: ingest and search.

    python -m benchmarks peer-compare --peer mem0=/tmp/mem0-venv/bin/python \\
        --peer chroma=/tmp/chroma-venv/bin/python --limit 2 --questions 50 --out benchmarks/results

Each peer is installed in its own virtual environment (never in omnimem's) and runs in a child process, its
worker beside this module (``<peer>_worker.py``: :mod:`benchmarks.speed.mem0_worker`,
:mod:`benchmarks.speed.chroma_worker`), on the same LoCoMo conversations as ``mem0-compare``
(:mod:`benchmarks.speed.mem0_compare`): one call per session with its turns as ``speaker: text``, each
conversation in a fresh store folder on disk, then the same questions searched in the conversation's user
scope (the peers top 20; omnimem its default 6,000-token context, ~200 hits, and right after each, the
same question with ``top_k=20``), every side embedding its queries, model
loads and a warm-up add and search before timing. Every peer embeds with sentence-transformers on the packaged
all-MiniLM-L6-v2 folder, the model omnimem stores; omnimem embeds its queries with the int8 copy (its default,
``fast_queries``). The passes run omnimem, then each peer followed by omnimem again, so a change of load on a
shared machine falls on every side; omnimem's figures are all its passes together, each pass listed.
Writes ``peer-compare.json`` and ``.md`` under ``--out``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from collections.abc import Sequence
from datetime import datetime, timezone
from importlib.metadata import version
from pathlib import Path
from typing import Any

from benchmarks.harness.perf import machine
from benchmarks.speed.mem0_compare import conversations, mem0_input, omnimem_pass, summary, worker_pass, write
from omnimem import Memory

SETUP = {
    "omnimem": "Memory(folder) defaults (all-MiniLM-L6-v2 stored, queries by its int8 copy), one add_dialogue per "
               "session, search(question, user_id) with the default 6,000-token context",
    "mem0": "mem0 Memory.from_config: huggingface embedder on the packaged MiniLM folder, faiss on disk, SQLite "
            "history; one add(messages, user_id, infer=False) per session, search(question, filters={user_id}, "
            "top_k=20)",
    "chroma": "chromadb.PersistentClient (embedded, on disk), SentenceTransformerEmbeddingFunction on the packaged "
              "MiniLM folder; one collection.add(ids, documents, metadatas={user_id}) per session, "
              "collection.query(query_texts=[question], n_results=20, where={user_id})",
}
FIRST_VERSION = {"mem0": "mem0ai", "chroma": "chromadb"}
TOP_K = 20  # omnimem is also timed for at most this many hits, the peers' result count


def run(peers: dict[str, str], limit: int, questions: int, command: str) -> dict[str, Any]:
    data = Path(os.environ.get("OMNIMEM_DATA_DIR", "../shared/data")) / "locomo" / "locomo10.json"
    convs = conversations(data, limit, questions)
    load_before = os.getloadavg()
    ours: list[dict[str, Any]] = []
    theirs: dict[str, dict[str, Any]] = {}
    loads: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="omnimem-peers-") as tmp:
        work = Path(tmp)
        source = work / "input.json"
        source.write_text(json.dumps(mem0_input(convs)), encoding="utf-8")
        with Memory(work / "warm") as warm:  # the model, the token counter and the search path before timing
            warm.add("load everything before timing", user_id="warm-up")
            warm.search("and the search path", user_id="warm-up")
        ours.append(omnimem_pass(convs, work / "omnimem-0", TOP_K))
        loads.append({"after": "omnimem", "load": round(os.getloadavg()[0], 2)})
        for name, python in peers.items():
            theirs[name] = worker_pass(name, Path(__file__).with_name(f"{name}_worker.py"), python, source,
                                       work / name)
            loads.append({"after": name, "load": round(os.getloadavg()[0], 2)})
            ours.append(omnimem_pass(convs, work / f"omnimem-{len(ours)}", TOP_K))
            loads.append({"after": "omnimem", "load": round(os.getloadavg()[0], 2)})
    mine = summary(ours)
    capped = summary([{**p, "search_seconds": p["search_seconds_top_k"]} for p in ours])
    sides = {name: summary([p]) for name, p in theirs.items()}
    return {
        "benchmark": "python -m benchmarks peer-compare", "command": command,
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"), "machine": machine(),
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in os.getloadavg()], "load_after_each_pass": loads,
        "conversations": len(convs), "setup": {k: SETUP[k] for k in ("omnimem", *peers)},
        "versions": {"omnimem_python": sys.version.split()[0], "sentence-transformers": version("sentence-transformers"),
                     "torch": version("torch"), **{f"{name}_side": p["versions"] for name, p in theirs.items()}},
        "omnimem": mine | {"passes_turns_per_s": [round(p["turns"] / p["add_seconds"], 1) for p in ours],
                           "search_top_k": TOP_K, "search_top_k_p50_ms": capped["search_p50_ms"],
                           "search_top_k_p95_ms": capped["search_p95_ms"]},
        **sides,
        "ratios": {name: {"ingest_turns_per_s_omnimem_over_peer": round(mine["turns_per_s"] / s["turns_per_s"], 2),
                          "search_p50_peer_over_omnimem": round(s["search_p50_ms"] / mine["search_p50_ms"], 2),
                          "search_p50_peer_over_omnimem_top_k": round(s["search_p50_ms"] / capped["search_p50_ms"], 2)}
                   for name, s in sides.items()},
    }


def table(doc: dict[str, Any]) -> str:
    o = doc["omnimem"]
    rows = [f"| omnimem (passes around each peer's) | {o['turns']} | {o['turns_per_s']} (passes "
            f"{o['passes_turns_per_s']}) | {o['search_p50_ms']} / {o['search_p95_ms']} (top {o['search_top_k']}: "
            f"{o['search_top_k_p50_ms']} / {o['search_top_k_p95_ms']}) | {o['searches']} | | |"]
    for name, r in doc["ratios"].items():
        s = doc[name]
        rows.append(f"| {name} {doc['versions'][f'{name}_side'][FIRST_VERSION[name]]} | {s['turns']} | "
                    f"{s['turns_per_s']} | {s['search_p50_ms']} / {s['search_p95_ms']} | {s['searches']} | "
                    f"**{r['ingest_turns_per_s_omnimem_over_peer']}x** | **{r['search_p50_peer_over_omnimem']}x** (top "
                    f"{o['search_top_k']}: {r['search_p50_peer_over_omnimem_top_k']}x) |")
    return "\n".join([
        "# omnimem beside mem0 and Chroma, one run (LoCoMo turns, the same MiniLM, offline)", "",
        f"`{doc['command']}` ({doc['date']}, load average {doc['load_average_before'][0]} before, "
        f"{doc['load_average_after'][0]} after; after each pass: "
        + ", ".join(f"{x['after']} {x['load']}" for x in doc["load_after_each_pass"]) + f"): {doc['conversations']} "
        "conversations.", "",
        "| system | turns | ingest turns/s | search p50 / p95 ms | searches | omnimem's ingest over it | its search "
        "p50 over omnimem's |", "|---|---|---|---|---|---|---|", *rows, "",
        *(f"- {name}: {text}" for name, text in doc["setup"].items()), ""])


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks peer-compare", description=__doc__.splitlines()[0])
    parser.add_argument("--peer", action="append", default=[], metavar="NAME=PYTHON", required=True,
                        help=f"a peer ({', '.join(FIRST_VERSION)}) and the interpreter of its virtual environment")
    parser.add_argument("--limit", type=int, default=2, help="LoCoMo conversations")
    parser.add_argument("--questions", type=int, default=50, help="questions searched per conversation")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results"))
    args = parser.parse_args(argv)
    peers: dict[str, str] = {}
    for given in args.peer:
        name, eq, python = given.partition("=")
        if not eq or name not in FIRST_VERSION or not python:
            parser.error(f"--peer takes NAME=PYTHON with NAME one of {', '.join(FIRST_VERSION)}, not {given!r}")
        peers[name] = python
    command = "python -m benchmarks peer-compare " + " ".join(sys.argv[1:] if argv is None else argv)
    write(run(peers, args.limit, args.questions, command), args.out, "peer-compare", table)


if __name__ == "__main__":
    main()
