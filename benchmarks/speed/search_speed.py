"""Search speed at one store size: today's default retrieval and the paper's, threads, first search after a write.

``python -m benchmarks search-speed --size 10000 --embedder minilm`` (real MiniLM vectors) or
``--embedder synthetic`` (``BagOfWordsEmbedder``: clustered random directions per word, for 100k and
1M). The store is synthetic dialogue (``benchmarks/harness/synthetic.py``), one ``add_dialogue`` per session.
Measured, all in one process and one run so that every timing has a ratio beside it:

- core search latency (query vector precomputed) p50/p95, global and scoped to a user, for the default
  retrieval (deep RRF filling 6,000 tokens, day packing) and the paper's (``fusion="union"``,
  ``packing="line"``, ``neighbours=0``); the first pass over the queries (nothing remembered about the
  candidates' lines yet) separately from the later passes;
- queries/s with 1 and 2 threads, for both, and for the raw index lookups alone (FAISS + BM25, top 20);
- the query embedding alone (the real model; ``end to end = core + embedding``);
- the first search after a write (one new session added) against the same search right after it, both
  with the query's candidates seen before (a fresh process's first searches are the first pass above).

Writes ``search-speed-<size>.json`` and ``.md`` under ``--out``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.harness.perf import TimedEmbedder, VectorLog, machine, make_embedder, versions
from benchmarks.harness.synthetic import queries, sessions
from omnimem.index.dense import DenseIndex
from omnimem.index.sparse import SparseIndex
from omnimem.mau import search_text

K = 20
PAPER = {"fusion": "union", "packing": "line", "neighbours": 0}


def _pcts(lat: Sequence[float]) -> dict[str, float]:
    ms = np.asarray(lat) * 1000
    return {"p50_ms": round(float(np.percentile(ms, 50)), 3), "p95_ms": round(float(np.percentile(ms, 95)), 3)}


def timed(fn: Callable[[Any], object], items: Sequence[Any], workers: int = 1) -> dict[str, float]:
    """Latency percentiles and throughput of ``fn`` over ``items`` with ``workers`` threads."""
    def one(item: Any) -> float:
        start = time.perf_counter()
        fn(item)
        return time.perf_counter() - start

    start = time.perf_counter()
    if workers == 1:
        lat = [one(item) for item in items]
    else:
        with ThreadPoolExecutor(workers) as pool:
            lat = list(pool.map(one, items))
    return {**_pcts(lat), "qps": round(len(items) / (time.perf_counter() - start), 1)}


def best_of(rounds: int, measure: Callable[[], dict[str, float]]) -> dict[str, Any]:
    """The median of each figure over ``rounds`` runs (the runs kept too)."""
    runs = [measure() for _ in range(rounds)]
    return {key: statistics.median(r[key] for r in runs) for key in runs[0]} | {"rounds": runs}


def build(store: Path, n: int, inner: Any) -> dict[str, Any]:
    """Ingest ``n`` synthetic turns, one ``add_dialogue`` per session; the stored vectors go to a file beside."""
    from omnimem import Memory

    log = VectorLog(store.with_suffix(".vectors"), inner.dim)
    start = time.perf_counter()
    with Memory(store, embedder=TimedEmbedder(inner, log=log)) as m:
        for user, session, turns in sessions(n, 0):
            m.add_dialogue(turns, user_id=user, session_id=session)
    seconds = time.perf_counter() - start
    log.load()  # closes the file
    (store.parent / f"{store.name}.built").write_text("ok", encoding="utf-8")
    return {"seconds": round(seconds, 1), "units": n}


def measure_retrieval(store: Path, embedder: Any, qs: list[tuple[str, str]], options: dict[str, Any],
                      rounds: int) -> dict[str, Any]:
    from omnimem import Memory

    out: dict[str, Any] = {"settings": options or "defaults"}
    with Memory(store, embedder=embedder, **options) as m:
        out["first_pass_global"] = timed(lambda q: m.search(q[0]), qs)  # nothing remembered yet
        out["global_w1"] = best_of(rounds, lambda: timed(lambda q: m.search(q[0]), qs))
        out["user_w1"] = best_of(rounds, lambda: timed(lambda q: m.search(q[0], user_id=q[1]), qs))
        out["global_w2"] = best_of(rounds, lambda: timed(lambda q: m.search(q[0]), qs, 2))
        out["user_w2"] = best_of(rounds, lambda: timed(lambda q: m.search(q[0], user_id=q[1]), qs, 2))
        ctx = m.search(qs[0][0])
        out["context"] = {"hits": len(ctx.hits), "tokens": ctx.tokens, "candidates": ctx.candidates}
    out["thread_scaling_global"] = round(out["global_w2"]["qps"] / out["global_w1"]["qps"], 2)
    out["thread_scaling_user"] = round(out["user_w2"]["qps"] / out["user_w1"]["qps"], 2)
    return out


def measure_raw(store: Path, n: int, dim: int, qvecs: dict[str, Any], qs: list[tuple[str, str]],
                rounds: int) -> dict[str, Any]:
    """A bare FAISS + BM25 lookup, top 20, over the same vectors and turn texts, for the ratios.

    Built here with the classes ``Memory`` uses (``DenseIndex``, IVF above 50k; ``SparseIndex``) from
    the vectors the ingest embedded and the turns' texts, without the store, packing or scopes.
    """
    vectors = np.fromfile(store.with_suffix(".vectors"), dtype=np.float32).reshape(-1, dim)
    dense = DenseIndex(dim)
    for start in range(0, len(vectors), 50_000):
        dense.add(range(start, start + len(vectors[start:start + 50_000])), vectors[start:start + 50_000])
    dense.optimize()
    del vectors
    texts = [search_text(t["speaker"], t["text"]) for _, _, turns in sessions(n, 0) for t in turns]
    sparse = SparseIndex()
    sparse.reset(list(range(len(texts))), texts)
    del texts

    def lookup(q: tuple[str, str]) -> None:
        dense.search(qvecs[q[0]], K, None)
        sparse.search(q[0], K, None)

    w1 = best_of(rounds, lambda: timed(lookup, qs))
    w2 = best_of(rounds, lambda: timed(lookup, qs, 2))
    return {"w1": w1, "w2": w2, "thread_scaling": round(w2["qps"] / w1["qps"], 2)}


def measure_after_write(store: Path, embedder: Any, qs: list[tuple[str, str]], n: int,
                        repeats: int = 5) -> dict[str, Any]:
    """The first search after adding a session, against the search right after it (same query)."""
    from omnimem import Memory

    first, second, adds, stored = [], [], [], 0
    run = time.time_ns()  # new text in every run, so a kept store never takes these turns as duplicates
    extra = [(user, session, [{**t, "text": f"{t['text']} (note {run}-{i})"} for i, t in enumerate(turns)])
             for user, session, turns in list(sessions(n + 30 * repeats, seed=99))[:repeats]]
    with Memory(store, embedder=embedder) as m:
        for q, _ in qs[: repeats + 1]:  # as in a running process: these queries' candidates seen once
            m.search(q)
        for i, (user, session, turns) in enumerate(extra):
            start = time.perf_counter()
            stored += sum(r.accepted for r in m.add_dialogue(turns, user_id=user, session_id=f"{session}-after-{i}"))
            adds.append(time.perf_counter() - start)
            q = qs[i + 1][0]
            start = time.perf_counter()
            m.search(q)
            first.append(time.perf_counter() - start)
            start = time.perf_counter()
            m.search(q)
            second.append(time.perf_counter() - start)
    f, s = statistics.median(first), statistics.median(second)
    return {"first_search_after_write_ms": round(f * 1000, 3), "next_search_ms": round(s * 1000, 3),
            "ratio": round(f / s, 2), "add_dialogue_ms": round(statistics.median(adds) * 1000, 1),
            "units_added": stored,
            "runs_first_ms": [round(x * 1000, 3) for x in first], "runs_next_ms": [round(x * 1000, 3) for x in second]}


def query_embedding(inner: Any, qs: list[tuple[str, str]]) -> dict[str, float]:
    lat = []
    for q, _ in qs[:50]:
        start = time.perf_counter()
        inner.embed([q])
        lat.append(time.perf_counter() - start)
    return _pcts(lat)


def markdown(doc: dict[str, Any]) -> str:
    d, p, raw = doc["default"], doc["paper"], doc["raw_lookup"]
    w = doc["after_write"]
    rows = [
        f"# Search speed at {doc['size']:,} units ({doc['embedder']})", "",
        f"`{doc['command']}`  ", f"{doc['date']}, load average {doc['load_average_before']} -> "
        f"{doc['load_average_after']} (2 shared cores: absolute times are pessimistic; read the ratios).", "",
        "| retrieval | global p50 / p95 ms | user p50 / p95 ms | first pass global p50 ms | q/s 1 / 2 threads (global) "
        "| 2-thread scaling global / user |",
        "|---|---|---|---|---|---|",
    ]
    for name, r in (("default (deep RRF, 6,000 tokens, day packing)", d), ("paper (union, line packing)", p)):
        rows.append(f"| {name} | {r['global_w1']['p50_ms']} / {r['global_w1']['p95_ms']} | {r['user_w1']['p50_ms']} / "
                    f"{r['user_w1']['p95_ms']} | {r['first_pass_global']['p50_ms']} | {r['global_w1']['qps']} / "
                    f"{r['global_w2']['qps']} | {r['thread_scaling_global']} / {r['thread_scaling_user']} |")
    rows.append(f"| raw FAISS + BM25 top 20 | {raw['w1']['p50_ms']} / {raw['w1']['p95_ms']} | | | {raw['w1']['qps']} / "
                f"{raw['w2']['qps']} | {raw['thread_scaling']} |")
    rows += [
        "", f"Query embedding alone (the real model): p50 {doc['query_embedding']['p50_ms']} ms.",
        f"Default core p50 / raw lookup p50: {round(d['global_w1']['p50_ms'] / raw['w1']['p50_ms'], 2)}; "
        f"default / paper: {round(d['global_w1']['p50_ms'] / p['global_w1']['p50_ms'], 2)}.",
        f"First search after adding a session: {w['first_search_after_write_ms']} ms against {w['next_search_ms']} ms "
        f"for the search after it (ratio {w['ratio']}, median of {len(w['runs_first_ms'])}); the add itself "
        f"{w['add_dialogue_ms']} ms ({w['units_added']} units stored in {len(w['runs_first_ms'])} adds).",
        f"Context of the first query: {d['context']}.",
    ]
    return "\n".join(rows) + "\n"


def _commit() -> str | None:
    import subprocess

    done = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True,
                          cwd=Path(__file__).resolve().parent)
    return done.stdout.strip() or None


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks search-speed",
                                     description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--size", type=int, required=True)
    parser.add_argument("--embedder", default="minilm", help="minilm, onnx or synthetic")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results"))
    parser.add_argument("--work-dir", type=Path, default=Path(os.environ.get("TMPDIR", "/tmp")) / "omnimem-speed")
    parser.add_argument("--keep-store", action="store_true", help="keep the store, and reuse one left by a run")
    args = parser.parse_args(argv)
    os.environ.setdefault("OMNIMEM_CONFIG", os.devnull)  # defaults only
    load_before = os.getloadavg()
    log = lambda line: print(line, file=sys.stderr, flush=True)  # noqa: E731
    inner = make_embedder(args.embedder)
    store = args.work_dir / f"speed-{args.size}-{args.embedder}"
    doc: dict[str, Any] = {"benchmark": "python -m benchmarks search-speed", "size": args.size,
                           "embedder": inner.name, "vectors": "real MiniLM" if args.embedder != "synthetic" else
                           "synthetic (BagOfWordsEmbedder) vectors and synthetic texts"}
    if not (args.keep_store and (store.parent / f"{store.name}.built").exists()):
        shutil.rmtree(store, ignore_errors=True)
        store.parent.mkdir(parents=True, exist_ok=True)
        log(f"building {args.size} units")
        doc["build"] = build(store, args.size, inner)
    qs = queries(args.queries, args.size, 1)
    qvecs = dict(zip([q for q, _ in qs], inner.embed([q for q, _ in qs])))
    cached = TimedEmbedder(inner, qvecs)
    doc["query_embedding"] = query_embedding(inner, qs)
    log("default retrieval")
    doc["default"] = measure_retrieval(store, cached, qs, {}, args.rounds)
    log("paper retrieval")
    doc["paper"] = measure_retrieval(store, cached, qs, PAPER, args.rounds)
    log("raw lookups")
    doc["raw_lookup"] = measure_raw(store, args.size, inner.dim, qvecs, qs, args.rounds)
    log("first search after a write")
    doc["after_write"] = measure_after_write(store, cached, qs, args.size)
    if not args.keep_store:
        shutil.rmtree(store, ignore_errors=True)
        store.with_suffix(".vectors").unlink(missing_ok=True)
    doc |= {"command": " ".join(["python -m benchmarks search-speed", *(argv if argv is not None else sys.argv[1:])]),
            "commit": os.environ.get("OMNIMEM_COMMIT") or _commit(),
            "date": datetime.now(timezone.utc).isoformat(timespec="seconds"), "machine": machine(),
            "versions": versions(), "load_average_before": [round(x, 2) for x in load_before],
            "load_average_after": [round(x, 2) for x in os.getloadavg()]}
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / f"search-speed-{args.size}.json"
    path.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    (args.out / f"search-speed-{args.size}.md").write_text(markdown(doc), encoding="utf-8")
    print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
