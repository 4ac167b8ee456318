"""``python -m benchmarks perf``: speed, memory and scale of the embedded store.

Each size runs in its own child process (``python -m benchmarks.speed.perf``),
so its peak RSS is its own, and writes ``perf-<size>.json``: the config,
versions, machine, load average and these measurements:

- ingest: ``Memory.add_dialogue`` per session (the loaders' call pattern)
  against the raw embedder on the same texts in the same batches, before and
  after the ingest (the mean of the two passes); also the share of ingest
  time spent inside the embedder, which is less sensitive to a noisy machine;
- retrieval: ``Memory.search`` (hybrid + pyramid, no LLM), global and scoped
  to one user, with 1 and 2 worker threads: p50/p95 latency and throughput.
  ``core`` gives the query vector precomputed (what the store and indexes
  cost); ``end_to_end`` embeds the query too;
- recall@20 of the dense index (IVF above its threshold) against exact search: a
  :class:`omnimem.index.dense.DenseIndex` (the index ``Memory`` uses, a public
  extension point) over the vectors the embedder gave ``Memory`` during the
  ingest (recorded on disk by the harness's embedder wrapper, keyed by user),
  so the harness needs no access to the store's internals;
- peak RSS, bytes on disk per unit, and the hot tier's bytes beyond the vector;
- cold start: ``omnimem search`` in a fresh process, to the first result.

Embedders: ``minilm`` (the default sentence-transformers model), ``onnx``
(int8 MiniLM) or ``synthetic`` (``BagOfWordsEmbedder``, for 1M units).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.harness.paths import ROOT
from benchmarks.harness.perf import (
    TimedEmbedder,
    VectorLog,
    dense_recall,
    machine,
    make_embedder,
    measure_search,
    versions,
)
from benchmarks.harness.synthetic import queries, sessions
from omnimem.embed import Embedder
from omnimem.mau import search_text

RAW_SAMPLE = 10_000  # turns the raw embedder is timed on (all of them at 10k)


def _raw_pass(embedder: Embedder, batches: list[list[str]]) -> float:
    start = time.perf_counter()
    for batch in batches:
        embedder.embed(batch)
    return sum(map(len, batches)) / (time.perf_counter() - start)


def measure_ingest(mem: Any, timed: TimedEmbedder, n: int, seed: int) -> dict[str, Any]:
    raw_batches: list[list[str]] = []
    for _user, _session, turns in sessions(min(n, RAW_SAMPLE), seed):
        raw_batches.append([search_text(t["speaker"], t["text"]) for t in turns])
    before = _raw_pass(timed.inner, raw_batches)
    stored = 0
    start = time.perf_counter()
    for user, session, turns in sessions(n, seed):
        if timed.log is not None:
            timed.log.user = user
        stored += sum(r.accepted for r in mem.add_dialogue(turns, user_id=user, session_id=session))
    ingest_s = time.perf_counter() - start
    after = _raw_pass(timed.inner, raw_batches)
    raw = (before + after) / 2
    return {
        "turns": n, "stored": stored, "seconds": round(ingest_s, 2),
        "units_per_s": round(n / ingest_s, 1),
        "raw_embedder_units_per_s": round(raw, 1), "raw_passes_units_per_s": [round(before, 1), round(after, 1)],
        "raw_sample_turns": sum(map(len, raw_batches)),
        "ratio_vs_raw": round(n / ingest_s / raw, 3),
        "embedder_share_of_ingest": round(timed.seconds / ingest_s, 3),
        "overhead_ms_per_unit": round((ingest_s - timed.seconds) / n * 1000, 3),
    }


def disk_usage(path: Path, n: int, dim: int) -> dict[str, Any]:
    def size(p: Path) -> int:
        if p.is_file():
            return p.stat().st_size
        return sum(f.stat().st_size for f in p.rglob("*") if f.is_file()) if p.exists() else 0

    db = sum(size(path / name) for name in ("omnimem.db", "omnimem.db-wal", "omnimem.db-shm"))
    parts = {
        "db_bytes": db, "cold_bytes": size(path / "cold"), "dense_index_bytes": size(path / "index" / "dense.faiss"),
        "bm25_index_bytes": size(path / "index" / "bm25"), "total_bytes": size(path),
    }
    per_unit = {k.replace("_bytes", "_per_unit"): round(v / n, 1) for k, v in parts.items()}
    return parts | per_unit | {"hot_tier_beyond_vector_per_unit": round(db / n - 4 * dim, 1)}


def cold_start(store: Path, query: str, repeats: int = 3) -> dict[str, Any]:
    """Wall time of ``omnimem search`` in a fresh process, to its first (JSON) result."""
    code = "import sys; from omnimem.cli import app; app(sys.argv[1:])"
    cmd = [sys.executable, "-c", code, "search", query, "--store", str(store), "--json"]
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        done = subprocess.run(cmd, capture_output=True, text=True, check=False)
        times.append(time.perf_counter() - start)
        if done.returncode != 0 or not json.loads(done.stdout).get("hits"):
            return {"error": done.stderr.strip()[-500:] or "no hits"}
    return {"median_s": round(statistics.median(times), 3), "runs_s": [round(t, 3) for t in times]}


def run_size(n: int, *, embedder: str, workers: Sequence[int], n_queries: int, work_dir: Path,
             rounds: int = 3, seed: int = 0, keep_store: bool = False, log: Callable[[str], None] = print) -> dict[str, Any]:
    from omnimem import Memory

    store = work_dir / f"perf-{n}-{embedder}"
    shutil.rmtree(store, ignore_errors=True)
    inner = make_embedder(embedder)
    vectors = VectorLog(work_dir / f"perf-{n}-{embedder}.vectors", inner.dim)
    timed = TimedEmbedder(inner, log=vectors)
    result: dict[str, Any] = {"size": n, "embedder": embedder, "embedder_name": inner.name}
    qs = queries(n_queries, n, seed + 1)

    mem = Memory(store, embedder=timed)
    log(f"[{n}] ingesting with {inner.name}")
    result["memory_settings"] = {  # retrieval settings in force (OMNIMEM_* variables can change them)
        k: getattr(mem.settings, k) for k in ("fusion", "depth", "neighbours", "expand_top", "packing", "top_k", "budget")
    }
    result["ingest"] = measure_ingest(mem, timed, n, seed)
    timed.log = None  # the recorded vectors are the stored units' (queries from here on are not)
    log(f"[{n}] ingest {result['ingest']}")
    start = time.perf_counter()
    mem.search(qs[0][0])
    result["first_search_after_ingest_s"] = round(time.perf_counter() - start, 3)  # BM25 rebuild, IVF training
    start = time.perf_counter()
    mem.close()
    result["close_s"] = round(time.perf_counter() - start, 3)

    start = time.perf_counter()
    qvecs = inner.embed([q for q, _ in qs])
    cached = TimedEmbedder(inner, {q: v for (q, _), v in zip(qs, qvecs)})
    mem = Memory(store, embedder=cached)
    result["reopen_s"] = round(time.perf_counter() - start, 3)
    mem.search(qs[0][0])  # warm-up (loads BM25 if it was saved stale)
    search: dict[str, Any] = {}
    for scoped in (False, True):
        for w in workers:
            key = f"{'user' if scoped else 'global'}_w{w}"
            search[f"core_{key}"] = measure_search(mem, qs, scoped, w, rounds)
            log(f"[{n}] core {key}: {search[f'core_{key}']['p50_ms']} ms p50")
    mem.close()
    mem = Memory(store, embedder=inner)
    for w in workers:
        search[f"end_to_end_global_w{w}"] = measure_search(mem, qs, False, w, 1)
    single = [time.perf_counter()]
    for q, _ in qs[: min(50, len(qs))]:
        inner.embed([q])
        single.append(time.perf_counter())
    search["query_embed_ms_p50"] = round(statistics.median(np.diff(single)) * 1000, 3)
    result["search"] = search
    result["peak_rss_mib_before_recall"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    result["dense"] = dense_recall(vectors, qvecs, [u for _, u in qs])
    vectors.path.unlink(missing_ok=True)
    log(f"[{n}] dense {result['dense']}")
    result["stats"] = {k: v for k, v in mem.stats().items() if k != "path"}
    mem.close()
    result["disk"] = disk_usage(store, n, inner.dim)
    if embedder != "synthetic":
        result["cold_start"] = cold_start(store, qs[0][0])
    result["peak_rss_mib"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    if not keep_store:
        shutil.rmtree(store, ignore_errors=True)
    else:
        result["store"] = str(store)
    return result


def write_result(result: dict[str, Any], out_dir: Path, argv: Sequence[str], load_before: Sequence[float]) -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    doc = {
        "benchmark": "python -m benchmarks perf",
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "command": " ".join(argv),
        "machine": machine(),
        "versions": versions(),
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
        **result,
    }
    path = out_dir / f"perf-{result['size']}.json"
    path.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    return path


def main(argv: Sequence[str] | None = None) -> int:
    """One size in this process: ``python -m benchmarks.speed.perf --size 10000 ...`` (``run_sizes`` starts it)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--size", type=int, required=True)
    parser.add_argument("--embedder", default="minilm")
    parser.add_argument("--workers", default="1,2")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results"))
    parser.add_argument("--work-dir", type=Path, default=Path(os.environ.get("TMPDIR", "/tmp")) / "omnimem-perf")
    parser.add_argument("--keep-store", action="store_true")
    args = parser.parse_args(argv)
    os.environ.setdefault("OMNIMEM_CONFIG", os.devnull)  # no user config file: defaults only
    load_before = os.getloadavg()
    args.work_dir.mkdir(parents=True, exist_ok=True)
    result = run_size(
        args.size, embedder=args.embedder, workers=[int(w) for w in args.workers.split(",")],
        n_queries=args.queries, work_dir=args.work_dir, rounds=args.rounds, keep_store=args.keep_store,
        log=lambda line: print(line, file=sys.stderr, flush=True),
    )
    print(write_result(result, args.out, ["python -m benchmarks perf", *(argv or sys.argv[1:])], load_before))
    return 0


def _child_env() -> dict[str, str]:
    """The environment with the repository root on PYTHONPATH, so ``-m benchmarks.speed.perf`` imports."""
    root = str(ROOT)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH", "")) if p)
    return env


def run_sizes(sizes: Sequence[int], embedders: Sequence[str], **options: Any) -> list[Path]:
    """Every size in its own child process (so each peak RSS is its own); returns the JSON paths."""
    paths = []
    for size, embedder in zip(sizes, embedders):
        cmd = [sys.executable, "-m", "benchmarks.speed.perf", "--size", str(size), "--embedder", embedder]
        for key, value in options.items():
            if value is True:
                cmd.append(f"--{key.replace('_', '-')}")
            elif value not in (None, False):
                cmd += [f"--{key.replace('_', '-')}", str(value)]
        done = subprocess.run(cmd, check=True, stdout=subprocess.PIPE, text=True, env=_child_env())
        paths.append(Path(done.stdout.strip().splitlines()[-1]))
    return paths


if __name__ == "__main__":
    raise SystemExit(main())
