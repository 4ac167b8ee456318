"""What a retrieval planner costs per search, on one synthetic store, in one run.

``python -m benchmarks planner-cost --size 10000`` ingests ``size`` synthetic turns
(``benchmarks/harness/synthetic.py``, the ``BagOfWordsEmbedder``: no model, so the figure is the planner's
own work, not the encoder's) into one in-memory ``Memory`` and times the same scoped queries,
interleaved, with ``planner=None`` (today's single search), ``"offline"`` and ``"llm"``. The LLM
planner answers through ``FakeLLM(latency=...)`` (default 0.3 s a call): its analysis names two
queries and its adequacy check asks for one more round, the worst case ``plan_rounds=1`` allows
(2 calls). Reported per planner: search p50 / p95, and for the LLM planner its calls, prompt and
completion tokens per search (as the fake counts them: words) and the model's share
(``retrieval + calls x latency``; its parallel searches are one wait). Writes
``results/planner-cost.json`` and ``.md``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.harness.perf import machine, versions
from benchmarks.harness.synthetic import BagOfWordsEmbedder, queries, sessions
from omnimem import Memory
from omnimem.llm import FakeLLM
from omnimem.llm.base import Message

PLANNERS: tuple[str | None, ...] = (None, "offline", "llm")


def model(messages: Sequence[Message]) -> str:
    """The fake model's replies: two expansion queries, then "not enough, search once more"."""
    system = str(messages[0]["content"])
    words = [w for w in str(messages[-1]["content"]).split("\n")[0].split() if len(w) > 3][:4]
    if "You plan searches" in system:
        return json.dumps({"needs": "the things named", "queries": [" ".join(words[:2]), " ".join(words[2:])]})
    return json.dumps({"adequate": False, "missing": "more of the same", "queries": [" ".join(words[1:3])]})


def run(size: int, count: int, latency: float, repeats: int) -> dict[str, Any]:
    mem = Memory(embedder=BagOfWordsEmbedder(), llm=FakeLLM(model, latency=latency), novelty=False, enrich="off",
                 llm_summaries=False)
    started = time.perf_counter()
    for user, session, turns in sessions(size, 0):
        mem.add_dialogue(turns, user_id=user, session_id=session)
    ingest_s = time.perf_counter() - started
    asked = queries(count, size)
    for text, user in asked[:5]:  # warm: the line-cost memo and the speaker memo, for every planner alike
        for planner in PLANNERS:
            mem.search(text, user_id=user, planner=planner or "none")
    times: dict[str, list[float]] = {str(p): [] for p in PLANNERS}
    plans: list[dict[str, Any]] = []
    for _ in range(repeats):
        for text, user in asked:
            for planner in PLANNERS:  # interleaved: the machine's load falls on every planner alike
                t0 = time.perf_counter()
                ctx = mem.search(text, user_id=user, planner=planner or "none")
                times[str(planner)].append(time.perf_counter() - t0)
                if planner == "llm" and ctx.plan is not None:
                    plans.append(ctx.plan.to_dict())
    mem.close()

    def pcts(lat: list[float]) -> dict[str, float]:
        ms = np.asarray(lat) * 1000
        return {"p50_ms": round(float(np.percentile(ms, 50)), 2), "p95_ms": round(float(np.percentile(ms, 95)), 2)}

    base = statistics.median(times["None"])
    out: dict[str, Any] = {"none": pcts(times["None"]), "offline": pcts(times["offline"])}
    out["offline"]["p50_ratio"] = round(statistics.median(times["offline"]) / base, 2)
    calls = [p["calls"] for p in plans]
    llm_ms = [t * 1000 for t in times["llm"]]
    retrieval = [t - c * latency * 1000 for t, c in zip(llm_ms, calls)]
    out["llm"] = {
        **pcts(times["llm"]), "model_latency_s": latency,
        "calls_per_search": round(float(np.mean(calls)), 2),
        "prompt_tokens_per_search": round(float(np.mean([p["prompt_tokens"] for p in plans])), 1),
        "completion_tokens_per_search": round(float(np.mean([p["completion_tokens"] for p in plans])), 1),
        "rounds_per_search": round(float(np.mean([len(p["rounds"]) for p in plans])), 2),
        "queries_per_search": round(float(np.mean([sum(len(r["queries"]) for r in p["rounds"]) for p in plans])), 2),
        "retrieval_p50_ms": round(float(np.percentile(retrieval, 50)), 2),
        "notes": sorted({str(p["note"]) for p in plans if p["note"]}),
    }
    return {"size": size, "queries": count, "repeats": repeats, "ingest_s": round(ingest_s, 1),
            "embedder": "synthetic-bow-384", "budget": 6000, "planners": out}


def markdown(result: dict[str, Any], command: str) -> str:
    p = result["planners"]
    llm = p["llm"]
    return "\n".join([
        f"# Planner cost at {result['size']:,} synthetic units", "", f"`{command}`", "",
        f"{result['queries']} scoped queries x {result['repeats']}, planners interleaved, budget 6,000 tokens, "
        "synthetic bag-of-words vectors (the planner's work, not the encoder's).", "",
        "| planner | p50 ms | p95 ms | calls | prompt tok | completion tok | rounds | queries |",
        "|---|---|---|---|---|---|---|---|",
        f"| none | {p['none']['p50_ms']} | {p['none']['p95_ms']} | 0 | 0 | 0 | 1 | 1 |",
        f"| offline | {p['offline']['p50_ms']} ({p['offline']['p50_ratio']}x) | {p['offline']['p95_ms']} | 0 | 0 | 0 "
        "| 1-2 | 1-3 |",
        f"| llm (fake model, {llm['model_latency_s']} s a call) | {llm['p50_ms']} | {llm['p95_ms']} | "
        f"{llm['calls_per_search']} | {llm['prompt_tokens_per_search']} | {llm['completion_tokens_per_search']} | "
        f"{llm['rounds_per_search']} | {llm['queries_per_search']} |", "",
        f"LLM planner: retrieval p50 {llm['retrieval_p50_ms']} ms + {llm['calls_per_search']} calls x "
        f"{llm['model_latency_s']} s (its parallel searches wait once). Tokens as the fake model counts them "
        "(words). Notes: " + (", ".join(llm["notes"]) or "none"), "",
    ])


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks planner-cost", description=__doc__.split("\n")[0])
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=40)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--latency", type=float, default=0.3, help="The fake model's seconds per call.")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results"))
    args = parser.parse_args(argv)
    result = run(args.size, args.queries, args.latency, args.repeats)
    command = f"python -m benchmarks planner-cost --size {args.size}" + (
        f" --queries {args.queries}" if args.queries != 40 else "") + (
        f" --repeats {args.repeats}" if args.repeats != 2 else "") + (
        f" --latency {args.latency}" if args.latency != 0.3 else "")
    result = {"benchmark": "planner-cost", "command": command, "date": datetime.now(timezone.utc).isoformat(
        timespec="seconds"), "machine": machine(), "versions": versions(), **result}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "planner-cost.json").write_text(json.dumps(result, indent=2) + "\n")
    (args.out / "planner-cost.md").write_text(markdown(result, command))
    print(markdown(result, command))


if __name__ == "__main__":
    main()
