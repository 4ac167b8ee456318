"""Where ``Memory.add_dialogue`` spends its time on PostgreSQL: the same turns with and without the HNSW index.

``python -m benchmarks pg-ingest-cost --turns 3000`` ingests the synthetic
dialogue of ``pg-scale`` into two fresh databases of one private PostgreSQL,
alternating session by session (so both see the same load): one with the
HNSW index (the normal store), one whose index was dropped, as during a
:class:`~omnimem.store.postgres.bulk.BulkLoader` load. The difference is
what maintaining the graph costs per unit; the rest is the pipeline and the
other writes. Also reported: the client's CPU seconds (the rest of the wall
time is spent waiting on the server). Writes ``pg-ingest-cost.json`` and
``.md`` under ``--out``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from benchmarks.harness.backends import database_server
from benchmarks.harness.perf import machine, versions
from benchmarks.harness.synthetic import BagOfWordsEmbedder, sessions


def run(turns: int, log: Any = print) -> dict[str, Any]:
    import psycopg

    from omnimem import Memory

    base = BagOfWordsEmbedder()
    out: dict[str, Any] = {"turns": turns}
    with database_server("pgserver") as databases:
        assert databases is not None
        urls = {"with_hnsw": databases.fresh(), "without_hnsw": databases.fresh()}
        mems = {name: Memory(url=url, embedder=base) for name, url in urls.items()}
        try:
            with psycopg.connect(urls["without_hnsw"], autocommit=True) as conn:
                conn.execute("DROP INDEX units_embedding_hnsw")
            wall = dict.fromkeys(mems, 0.0)
            cpu = dict.fromkeys(mems, 0.0)
            for user, session, dialogue in sessions(turns, 0):
                for name, mem in mems.items():  # alternate: both stores see the same machine load
                    start, cpu_start = time.perf_counter(), time.process_time()
                    mem.add_dialogue(dialogue, user_id=user, session_id=session)
                    wall[name] += time.perf_counter() - start
                    cpu[name] += time.process_time() - cpu_start
            for name in mems:
                out[name] = {"seconds": round(wall[name], 2), "units_per_s": round(turns / wall[name], 1),
                             "client_cpu_ms_per_unit": round(cpu[name] / turns * 1000, 3),
                             "wall_ms_per_unit": round(wall[name] / turns * 1000, 3)}
                log(f"[{name}] {out[name]}")
        finally:
            for mem in mems.values():
                mem.close()
            for url in urls.values():
                databases.drop(url)
    out["hnsw_share_of_wall"] = round(1 - wall["without_hnsw"] / wall["with_hnsw"], 3)
    out["hnsw_ms_per_unit"] = round((wall["with_hnsw"] - wall["without_hnsw"]) / turns * 1000, 3)
    return out


def table(doc: dict[str, Any]) -> str:
    rows = ["| store | units/s | wall ms per unit | client CPU ms per unit |", "|---|---|---|---|"]
    for name, label in (("with_hnsw", "with the HNSW index (normal)"), ("without_hnsw", "index dropped (bulk load)")):
        r = doc[name]
        rows.append(f"| {label} | {r['units_per_s']} | {r['wall_ms_per_unit']} | {r['client_cpu_ms_per_unit']} |")
    rows.append("")
    rows.append(f"Maintaining the HNSW graph: {doc['hnsw_ms_per_unit']} ms per unit, "
                f"{doc['hnsw_share_of_wall']:.0%} of the wall time of add_dialogue.")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks pg-ingest-cost", description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=3000)
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results"))
    args = parser.parse_args(argv)
    load_before = os.getloadavg()
    started = time.perf_counter()
    result = run(args.turns, log=lambda line: print(line, file=sys.stderr, flush=True))
    command = f"python -m benchmarks pg-ingest-cost --turns {args.turns}"
    doc = {"benchmark": "python -m benchmarks pg-ingest-cost", "command": command,
           "date": datetime.now(timezone.utc).isoformat(timespec="seconds"), "machine": machine(),
           "versions": versions(), "load_average_before": [round(x, 2) for x in load_before],
           "load_average_after": [round(x, 2) for x in os.getloadavg()],
           "seconds": round(time.perf_counter() - started, 1), **result}
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "pg-ingest-cost.json"
    path.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    md = args.out / "pg-ingest-cost.md"
    md.write_text(f"# add_dialogue on PostgreSQL with and without the HNSW index, {args.turns:,} synthetic turns\n\n"
                  f"`{command}`\n\n{doc['date']}, load average {doc['load_average_before']} -> "
                  f"{doc['load_average_after']}, {doc['seconds']} s. The two stores are fed alternately, session "
                  f"by session.\n\n{table(doc)}\n", encoding="utf-8")
    print(f"wrote {path} and {md}")
    print(table(doc))


if __name__ == "__main__":
    main()
