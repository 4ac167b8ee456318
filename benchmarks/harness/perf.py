"""Timing helpers shared by the speed, retrieval-cost and PostgreSQL benchmarks.

The embedder wrappers that time and record what ``Memory`` embeds (:class:`TimedEmbedder`,
:class:`VectorLog`), the machine and package versions a result records, search latency at a number of
threads (:func:`measure_search`), recall@20 of the dense index against exact search
(:func:`dense_recall`), CPU time per call (:func:`cpu_rounds`), the options of a benchmark over a kept
store (:func:`kept_store_parser`) and the stamped JSON + markdown writer (:func:`write_doc`).
``python -m benchmarks perf`` itself is :mod:`benchmarks.speed.perf`.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.harness.synthetic import BagOfWordsEmbedder
from omnimem.embed import Embedder, create_embedder
from omnimem.index.dense import DenseIndex

K = 20


def make_embedder(kind: str) -> Embedder:
    if kind == "synthetic":
        return BagOfWordsEmbedder()
    return create_embedder({"minilm": "all-MiniLM-L6-v2", "onnx": "all-MiniLM-L6-v2-int8"}.get(kind, kind))


class VectorLog:
    """The vectors an embedder produced, appended to a file (so they do not add to the RSS), each with its user."""

    def __init__(self, path: Path, dim: int) -> None:
        self.path = path
        self.dim = dim
        self.user = ""  # whose dialogue is being ingested (set by the caller)
        self.users: list[str] = []
        self.counts: list[int] = []
        self._file = path.open("wb")

    def write(self, vectors: np.ndarray) -> None:
        self._file.write(np.ascontiguousarray(vectors, dtype=np.float32).tobytes())
        self.users.append(self.user)
        self.counts.append(len(vectors))

    def load(self) -> tuple[np.ndarray, np.ndarray]:
        """(vectors, user of each vector), in the order they were made."""
        self._file.close()
        vectors = np.fromfile(self.path, dtype=np.float32).reshape(-1, self.dim)
        return vectors, np.repeat(np.asarray(self.users, dtype=object), self.counts)


class TimedEmbedder:
    """Wraps an embedder: counts the seconds spent inside it, answers known queries from a cache, and
    records what it embeds when given a :class:`VectorLog`."""

    def __init__(self, inner: Embedder, cached: dict[str, np.ndarray] | None = None,
                 log: VectorLog | None = None) -> None:
        self.inner = inner
        self.name = inner.name
        self.dim = inner.dim
        self.cached = cached or {}
        self.log = log
        self.seconds = 0.0

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if len(texts) == 1 and texts[0] in self.cached:
            return self.cached[texts[0]][None, :]
        start = time.perf_counter()
        out = self.inner.embed(texts)
        self.seconds += time.perf_counter() - start
        if self.log is not None:
            self.log.write(out)
        return out


def machine() -> dict[str, Any]:
    return {
        "platform": platform.platform(),
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "cpu": _cpu_model(),
        "memory_gib": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1),
    }


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for pkg in ("omnimem", "faiss-cpu", "bm25s", "numpy", "onnxruntime", "sentence-transformers", "torch"):
        try:
            out[pkg] = version(pkg)
        except PackageNotFoundError:
            pass
    return out


def _pcts(lat: list[float]) -> dict[str, float]:
    arr = np.asarray(lat) * 1000
    return {"p50_ms": round(float(np.percentile(arr, 50)), 3), "p95_ms": round(float(np.percentile(arr, 95)), 3)}


def measure_search(mem: Any, qs: list[tuple[str, str]], scoped: bool, workers: int, rounds: int) -> dict[str, Any]:
    def one(q: tuple[str, str]) -> float:
        start = time.perf_counter()
        mem.search(q[0], user_id=q[1] if scoped else None)
        return time.perf_counter() - start

    runs = []
    for _ in range(rounds):
        start = time.perf_counter()
        with ThreadPoolExecutor(workers) as pool:
            lat = list(pool.map(one, qs))
        runs.append({**_pcts(lat), "qps": round(len(qs) / (time.perf_counter() - start), 1)})
    return {key: statistics.median(r[key] for r in runs) for key in runs[0]} | {"rounds": runs}


def dense_recall(log: VectorLog, qvecs: np.ndarray, users: list[str]) -> dict[str, Any]:
    """recall@20 of the dense index against exact inner product over the same vectors.

    The index is a ``DenseIndex`` over the vectors ``Memory`` stored (the ingest's embedder calls, in
    order); like ``Memory``'s own, it is trained once, at its first search, on all of them.
    """
    all_vecs, owners = log.load()
    all_ids = np.arange(len(all_vecs), dtype=np.int64)
    dense = DenseIndex(log.dim)
    dense.add(all_ids.tolist(), all_vecs)
    dense.optimize()
    out: dict[str, Any] = {"ann": dense.is_ann, "nlist": dense.nlist, "nprobe": dense.nprobe, "k": K,
                           "vectors": len(all_vecs)}
    for label, scoped in (("global", False), ("user", True)):
        hits = total = 0
        seconds = 0.0
        for q, user in zip(qvecs, users):
            if scoped:
                mask = owners == user
                allowed = all_ids[mask]
                cand_ids, scores = allowed, all_vecs[mask] @ q
            else:
                allowed, cand_ids, scores = None, all_ids, all_vecs @ q
            want = set(cand_ids[np.argsort(-scores, kind="stable")[:K]].tolist())
            start = time.perf_counter()
            got = {rid for rid, _ in dense.search(q, K, allowed)}
            seconds += time.perf_counter() - start
            hits += len(got & want)
            total += len(want)
        out[f"recall_{label}"] = round(hits / total, 4)
        out[f"dense_ms_{label}"] = round(seconds / len(qvecs) * 1000, 3)
    return out


def cpu_rounds(one: Callable[[Any], Any], items: Sequence[Any], rounds: int) -> list[float]:
    """CPU seconds (``time.process_time``) of ``one(item)`` for every item, ``rounds`` times over."""
    cpu: list[float] = []
    for _ in range(rounds):
        for item in items:
            start = time.process_time()
            one(item)
            cpu.append(time.process_time() - start)
    return cpu


def kept_store_parser(doc: str | None, prog: str | None = None) -> argparse.ArgumentParser:
    """The options of a benchmark over a kept store (``search-speed --keep-store``): --store, --size, --embedder,
    --queries, --rounds, --out."""
    parser = argparse.ArgumentParser(prog=prog, description=doc.splitlines()[0] if doc else None)
    parser.add_argument("--store", type=Path, required=True)
    parser.add_argument("--size", type=int, required=True, help="the size the store was built with (for the queries)")
    parser.add_argument("--embedder", default="minilm")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results"))
    return parser


def write_doc(doc: dict[str, Any], *, command: str, argv: Sequence[str] | None, load_before: Sequence[float],
              out: Path, stem: str, markdown: Callable[[dict[str, Any]], str]) -> Path:
    """Stamp a benchmark's ``doc`` (its command line, date, machine, versions, load before and after), then write
    ``<out>/<stem>.json`` and ``.md``; returns the JSON path."""
    doc |= {"command": " ".join([command, *(argv if argv is not None else sys.argv[1:])]),
            "date": datetime.now(timezone.utc).isoformat(timespec="seconds"), "machine": machine(),
            "versions": versions(), "load_average_before": [round(x, 2) for x in load_before],
            "load_average_after": [round(x, 2) for x in os.getloadavg()]}
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{stem}.json"
    path.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    (out / f"{stem}.md").write_text(markdown(doc), encoding="utf-8")
    return path
