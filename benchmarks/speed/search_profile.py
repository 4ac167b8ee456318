"""How much of a default search could run on two threads at once: the share outside the GIL.

Searches from several threads of one process only overlap where a search has let go of the GIL:
FAISS's search, SQLite's statement steps and tiktoken's encoder do; Python code does not. The
share is an upper bound for SQLite (``fetchall`` is counted whole, though building its rows'
Python objects holds the GIL) and a lower bound for numpy (counted as holding the GIL, which
its small arrays in a search mostly do). Own times are CPU time (``time.process_time``), so a
loaded machine's waits are not counted as work. This opens a
kept store (``search-speed --keep-store``), runs the default search over the benchmark queries
without a profiler (CPU time per search), then once more under ``cProfile`` for the own time of
those native calls, and reports their share of the unprofiled CPU time with what it allows::

    python -m benchmarks search-profile --store $TMPDIR/omnimem-speed/speed-10000-minilm --size 10000 \\
        --embedder minilm --out benchmarks/results

Bounds for 2 threads on 2 cores, with ``g`` the share holding the GIL: ``1 / g`` if the GIL were
the only limit and everything else overlapped perfectly (capped at 2), ``1 / (g + (1 - g) / 2)``
by Amdahl's law (no overlap of the GIL-held parts with anything). Writes ``search-profile-<n>.json``
and ``.md``.
"""

from __future__ import annotations

import cProfile
import os
import pstats
import statistics
import time
from collections.abc import Sequence
from typing import Any

from benchmarks.harness.perf import TimedEmbedder, cpu_rounds, kept_store_parser, make_embedder, write_doc
from benchmarks.harness.synthetic import queries

# own time of these calls runs without the GIL (C extensions that release it around their work)
NATIVE = {
    "sqlite": ("method 'fetchall' of 'sqlite3.Cursor'", "method 'fetchone' of 'sqlite3.Cursor'",
               "method 'execute' of 'sqlite3.Connection'"),
    "faiss": ("faiss._swigfaiss",),
    "tiktoken": ("of 'builtins.CoreBPE'",),
}


def _native_seconds(stats: pstats.Stats) -> dict[str, float]:
    out = {name: 0.0 for name in NATIVE}
    for (_file, _line, func), (_cc, _nc, tottime, _ct, _callers) in stats.stats.items():  # type: ignore[attr-defined]
        for name, needles in NATIVE.items():
            if any(needle in func for needle in needles):
                out[name] += tottime
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = kept_store_parser(__doc__, "python -m benchmarks search-profile")
    args = parser.parse_args(argv)
    os.environ.setdefault("OMNIMEM_CONFIG", os.devnull)
    from omnimem import Memory

    load_before = os.getloadavg()
    inner = make_embedder(args.embedder)
    qs = queries(args.queries, args.size, 1)
    emb = TimedEmbedder(inner, dict(zip([q for q, _ in qs], inner.embed([q for q, _ in qs]))))
    doc: dict[str, Any] = {"benchmark": "python -m benchmarks search-profile", "size": args.size,
                           "embedder": inner.name}
    with Memory(args.store, embedder=emb) as m:
        for scoped in (False, True):
            def one(q: tuple[str, str], scoped: bool = scoped) -> None:
                m.search(q[0], user_id=q[1] if scoped else None)

            for q in qs:  # warm: line facts remembered, as in a running process
                one(q)
            cpu = cpu_rounds(one, qs, args.rounds)
            profile = cProfile.Profile(time.process_time)  # CPU time: waiting for a core under load is not work
            profile.enable()
            for q in qs:
                one(q)
            profile.disable()
            native = {k: v / len(qs) * 1000 for k, v in _native_seconds(pstats.Stats(profile)).items()}
            mean_cpu = statistics.fmean(cpu) * 1000
            free = sum(native.values()) / mean_cpu
            held = 1 - free
            doc["user" if scoped else "global"] = {
                "cpu_ms_per_search_mean": round(mean_cpu, 3), "cpu_ms_per_search_p50": round(statistics.median(cpu) * 1000, 3),
                "outside_gil_ms": {k: round(v, 3) for k, v in native.items()},
                "share_outside_gil": round(free, 3), "share_holding_gil": round(held, 3),
                "two_thread_bound_gil_only": round(min(2.0, 1 / held), 2),
                "two_thread_bound_amdahl": round(1 / (held + free / 2), 2),
            }
    path = write_doc(doc, command="python -m benchmarks search-profile", argv=argv, load_before=load_before, out=args.out,
                     stem=f"search-profile-{args.size}", markdown=markdown)
    print(path)
    return 0


def markdown(doc: dict[str, Any]) -> str:
    rows = [
        f"| {kind} | {r['cpu_ms_per_search_mean']} | {r['outside_gil_ms']['sqlite']} / {r['outside_gil_ms']['faiss']} / "
        f"{r['outside_gil_ms']['tiktoken']} | {round(100 * r['share_outside_gil'], 1)}% | "
        f"{r['two_thread_bound_gil_only']}x / {r['two_thread_bound_amdahl']}x |"
        for kind, r in ((k, doc[k]) for k in ("global", "user"))
    ]
    return "\n".join([
        f"# Default search: the share outside the GIL ({doc['size']:,} units, {doc['embedder']})", "",
        f"`{doc['command']}`", "",
        "| search | CPU ms per search (mean) | outside the GIL ms: SQLite / FAISS / tiktoken | share outside the GIL "
        "| 2-thread q/s bound: GIL only / Amdahl |",
        "|---|---|---|---|---|", *rows, "",
        f"Load average {doc['load_average_before']} before, {doc['load_average_after']} after; {doc['date']}.", "",
    ])


if __name__ == "__main__":
    raise SystemExit(main())
