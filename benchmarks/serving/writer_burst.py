"""Writer burst: an add in a burst of concurrent in-process adds, against a lone add in the same run.

The store is on disk with the real all-MiniLM-L6-v2 and is seeded with the
turns of LoCoMo conv-26; the measured adds are turns of conv-30 (new content,
each one stored). Each round times ``--lone`` adds one after the other, then
a burst: ``--burst`` threads released together by a barrier, each calling
``Memory.add`` once (the latency of each is from the release to its return).
Rounds interleave so machine load hits both alike; the figures to read are the
ratios of the burst's p50 and p95 to the lone add's p50 and p95. After the run every
acknowledged add must be found by id (``lost`` must be 0).

    python -m benchmarks writer-burst [--rounds 8] [--burst 24] [--lone 4] [--profile FILE]
        [--out benchmarks/results]

``--profile`` also writes a cProfile of every burst add's thread (the
leader's share is the group's work) to FILE. Writes writer-burst.json and
writer-burst.md under --out.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import platform
import statistics
import tempfile
import threading
import time
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from omnimem import Memory, __version__
from omnimem.contract.loaders import load_locomo


def _pct(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _row(name: str, values: Sequence[float], base: Sequence[float]) -> dict[str, Any]:
    p50, p95 = _pct(values, 0.5), _pct(values, 0.95)
    return {"call": name, "n": len(values), "p50_ms": round(p50 * 1e3, 2), "p95_ms": round(p95 * 1e3, 2),
            "mean_ms": round(statistics.fmean(values) * 1e3, 2),
            "p50_ratio": round(p50 / _pct(base, 0.5), 2), "p95_ratio": round(p95 / _pct(base, 0.95), 2)}


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks writer-burst", description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--burst", type=int, default=24, help="adds released together per round")
    parser.add_argument("--lone", type=int, default=4, help="adds one after the other per round")
    parser.add_argument("--profile", default=None, help="write a cProfile (pstats) of the burst adds here")
    parser.add_argument("--data-dir", default=os.environ.get("OMNIMEM_DATA_DIR", "../shared/data"))
    parser.add_argument("--out", default="benchmarks/results")
    args = parser.parse_args(argv)

    locomo = Path(args.data_dir) / "locomo" / "locomo10.json"
    seed = load_locomo(locomo, conversation="conv-26")
    turns = [t for d in load_locomo(locomo, conversation="conv-30") for t in d.turns]
    need = args.rounds * (args.burst + args.lone)
    if len(turns) < need:
        raise SystemExit(f"conv-30 has {len(turns)} turns; {need} are needed")
    texts = iter(f"{t['speaker']}: {t['text']}" for t in turns)
    load_before = os.getloadavg()
    profiles: list[cProfile.Profile] = []
    with tempfile.TemporaryDirectory() as folder:
        mem = Memory(path=Path(folder) / "store")
        try:
            for dialogue in seed:
                mem.add_dialogue(dialogue.turns, user_id="bench", session_id=dialogue.session_id)
            mem.add("warm-up: the model and the indexes are loaded before anything is timed", user_id="bench")
            lone: list[float] = []
            burst: list[float] = []
            acknowledged: list[str] = []
            groups: list[int] = []
            for _ in range(args.rounds):
                for _ in range(args.lone):
                    text = next(texts)
                    start = time.perf_counter()
                    result = mem.add(text, user_id="bench")
                    lone.append(time.perf_counter() - start)
                    acknowledged += [result.id] if result.id else []
                barrier = threading.Barrier(args.burst + 1)
                released: list[float] = []
                took: list[float] = [0.0] * args.burst
                ids: list[str | None] = [None] * args.burst
                before = mem.stats()["writer"]["groups"]

                def one(n: int, text: str) -> None:
                    profile = cProfile.Profile() if args.profile else None
                    barrier.wait()
                    if profile is not None:
                        profile.enable()
                    ids[n] = mem.add(text, user_id="bench").id
                    took[n] = time.perf_counter() - released[0]
                    if profile is not None:
                        profile.disable()
                        profiles.append(profile)

                threads = [threading.Thread(target=one, args=(n, next(texts))) for n in range(args.burst)]
                for thread in threads:
                    thread.start()
                released.append(time.perf_counter())
                barrier.wait()
                for thread in threads:
                    thread.join()
                burst.extend(took)
                acknowledged += [i for i in ids if i]
                groups.append(mem.stats()["writer"]["groups"] - before)
            lost = sum(1 for uid in acknowledged if not _found(mem, uid))
        finally:
            mem.close()
    load_after = os.getloadavg()
    stages: dict[str, float] = {}
    if args.profile and profiles:
        import pstats

        stats = pstats.Stats(profiles[0])
        for extra in profiles[1:]:
            stats.add(extra)
        stats.dump_stats(args.profile)
        stages = _stages(stats)
    rows = [_row("lone add", lone, lone), _row(f"add in a burst of {args.burst}", burst, lone)]
    result = {
        "benchmark": "writer-burst",
        "command": f"python -m benchmarks writer-burst --rounds {args.rounds} --burst {args.burst} "
                   f"--lone {args.lone}",
        "version": __version__, "python": platform.python_version(), "cpus": os.cpu_count(),
        "when": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "load_before": [round(x, 1) for x in load_before], "load_after": [round(x, 1) for x in load_after],
        "rows": rows, "groups_per_burst": groups, "burst_stages_s": stages, "acknowledged": len(acknowledged), "lost": lost,
        "lone_s": [round(x, 5) for x in lone], "burst_s": [round(x, 5) for x in burst],
    }
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "writer-burst.json").write_text(json.dumps(result, indent=2) + "\n")
    table = "\n".join(f"| {r['call']} | {r['n']} | {r['p50_ms']} | {r['p95_ms']} | {r['mean_ms']} | "
                      f"{r['p50_ratio']} | {r['p95_ratio']} |" for r in rows)
    (out / "writer-burst.md").write_text(
        "# Writer burst (in process)\n\n"
        f"`Memory.add` from {args.burst} threads released together, against lone adds in the same run "
        "(all-MiniLM-L6-v2, store on disk seeded with LoCoMo conv-26; the adds are conv-30 turns; rounds "
        f"interleaved). Groups the writer formed per burst: {groups}. Acknowledged adds: {len(acknowledged)}, "
        f"lost: {lost}. Load average before {result['load_before']}, after {result['load_after']} on "
        f"{os.cpu_count()} shared cores: read the ratios rather than the milliseconds.\n\n"
        "| call | n | p50 ms | p95 ms | mean ms | p50 / lone p50 | p95 / lone p95 |\n|---|---|---|---|---|---|---|\n"
        f"{table}\n\n{_stage_table(stages)}Command: `{result['command']}`\n")
    print(json.dumps(rows, indent=2), "groups per burst", groups, "lost", lost)


# Where the burst adds' time went (cProfile, summed over every burst add's thread): the functions below
# are the same in every version of the writer, so runs of different versions compare stage by stage.
STAGES = {
    "groups written (the leader's whole share)": ("writer", "_lead"),
    "embedding calls": ("embed/minilm.py", "embed"),
    "store transactions of the units": ("store/sqlite/store.py", "insert"),
    "index updates": ("index/manager.py", "added"),
    "counter writes": ("store/sqlite/store.py", "add_stats"),
}


def _stages(stats: Any) -> dict[str, float]:
    out: dict[str, float] = {}
    for name, (where, function) in STAGES.items():
        out[name] = round(sum(v[3] for (path, _, func), v in stats.stats.items()
                              if func == function and where in path), 3)
        out[name + ": calls"] = sum(v[1] for (path, _, func), v in stats.stats.items()
                                    if func == function and where in path)
    return out


def _stage_table(stages: dict[str, float]) -> str:
    if not stages:
        return ""
    lines = [f"| {name} | {stages[name]} | {stages[name + ': calls']} |" for name in STAGES]
    return ("Where the burst adds' time went (`--profile`: cProfile of every burst add's thread, summed; "
            "profiling slows Python, so these seconds exceed the table's):\n\n| stage | seconds | calls |\n"
            "|---|---|---|\n" + "\n".join(lines) + "\n\n")


def _found(mem: Memory, unit_id: str) -> bool:
    try:
        mem.get(unit_id)
    except Exception:  # NotFoundError: the acknowledged add is missing
        return False
    return True


if __name__ == "__main__":
    main()
