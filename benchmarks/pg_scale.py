"""PostgreSQL beside the embedded backend at one size, in one run: ingest, HNSW build, search, recall.

``python -m benchmarks pg-scale --size 100000 --url pgserver`` ingests the
same deterministic synthetic dialogue (:mod:`benchmarks.synthetic`, the
``synthetic`` bag-of-words embedder, so the numbers are omnimem's and the
database's cost, not a model's) through ``Memory.add_dialogue`` into an
embedded store and into a PostgreSQL database, then measures on both:

- ingest units/s (and PostgreSQL over embedded, the ratio that survives a loaded machine);
- PostgreSQL's HNSW build time from scratch over all units, and the index's size per unit;
- ``Memory.search`` p50/p95 (query vectors precomputed), global and scoped to a user;
- dense recall@20 of each backend's candidate search against exact inner product.

Writes ``pg-scale-<size>.json`` and ``POSTGRES.md`` (the table) under ``--out``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.backends import database_server
from benchmarks.perf import K, TimedEmbedder, VectorLog, machine, measure_search, versions
from benchmarks.perf import dense_recall as perf_dense_recall
from benchmarks.synthetic import BagOfWordsEmbedder, queries, sessions


def ingest(mem: Any, n: int, vectors: VectorLog | None = None) -> dict[str, float]:
    start = time.perf_counter()
    stored = 0
    for user, session, turns in sessions(n, 0):
        if vectors is not None:
            vectors.user = user
        stored += sum(r.accepted for r in mem.add_dialogue(turns, user_id=user, session_id=session))
    seconds = time.perf_counter() - start
    return {"turns": n, "stored": stored, "seconds": round(seconds, 2), "units_per_s": round(n / seconds, 1)}


def hnsw_build(url: str) -> dict[str, Any]:
    """Drop and rebuild the HNSW index over every unit (what a bulk load or a re-embed costs)."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SET maintenance_work_mem = '1GB'")
        definition = conn.execute("SELECT indexdef FROM pg_indexes WHERE indexname = 'units_embedding_hnsw'"
                                  ).fetchone()[0]
        conn.execute("DROP INDEX units_embedding_hnsw")
        start = time.perf_counter()
        conn.execute(definition)
        seconds = time.perf_counter() - start
        size = int(conn.execute("SELECT pg_relation_size('units_embedding_hnsw')").fetchone()[0])
        units = int(conn.execute("SELECT COUNT(*) FROM units").fetchone()[0])
        table = int(conn.execute("SELECT pg_total_relation_size('units')").fetchone()[0])
        terms = int(conn.execute("SELECT pg_total_relation_size('terms')").fetchone()[0])
    return {"seconds": round(seconds, 2), "index_bytes": size, "index_bytes_per_unit": round(size / units, 1),
            "index_mib_per_million_units": round(size / units * 1e6 / 2**20, 1),
            "units_table_bytes_per_unit": round(table / units, 1), "terms_bytes_per_unit": round(terms / units, 1),
            "maintenance_work_mem": "1GB", "definition": definition}


def pg_dense_recall(url: str, qvecs: np.ndarray, users: list[str]) -> dict[str, Any]:
    """recall@K of pgvector's HNSW (the backend's index and ``ef_search``) against exact inner product, in SQL.

    Scoped searches below 20,000 units never use HNSW (the backend ranks them exactly), so ``user`` is
    the exact ranking against itself, measured the same way for the record.
    """
    import psycopg
    from pgvector.psycopg import register_vector

    out: dict[str, Any] = {"k": K, "ef_search": max(40, 2 * K)}
    with psycopg.connect(url) as conn:
        register_vector(conn)
        conn.execute("SELECT set_config('hnsw.ef_search', %s, false)", (str(out["ef_search"]),))
        for label, scoped in (("global", False), ("user", True)):
            hits = 0
            for q, user in zip(qvecs, users):
                where, args = ("WHERE user_id = %s", [user]) if scoped else ("", [])
                order = "(embedding <#> %s) + 0" if scoped else "embedding <#> %s"
                approx = {r[0] for r in conn.execute(f"SELECT rid FROM units {where} ORDER BY {order} LIMIT %s",
                                                     [*args, q, K])}
                exact = {r[0] for r in conn.execute(
                    f"SELECT rid FROM units {where} ORDER BY (embedding <#> %s) + 0 LIMIT %s", [*args, q, K])}
                hits += len(approx & exact)
            out[f"recall_{label}"] = round(hits / (K * len(users)), 4)
    return out


def measure(mem: Any, qs: list[tuple[str, str]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    mem.search(qs[0][0], top_k=K)  # warm-up: the embedded backend builds BM25 here
    for scoped in (False, True):
        key = "user" if scoped else "global"
        result[f"search_{key}"] = measure_search(mem, qs, scoped, 1, 3)
    return result


def run(n: int, url: str, n_queries: int, log: Any = print) -> dict[str, Any]:
    from omnimem import Memory

    base = BagOfWordsEmbedder()
    qs = queries(n_queries, n, 1)
    qvecs = base.embed([q for q, _ in qs])
    cached = {q: v for (q, _), v in zip(qs, qvecs)}
    out: dict[str, Any] = {"size": n, "embedder": base.name, "queries": n_queries, "k": K}
    folder = Path(tempfile.mkdtemp(prefix="omnimem-pg-scale-"))
    try:
        vectors = VectorLog(folder / "vectors", base.dim)  # what the embedded index holds, for its recall
        timed = TimedEmbedder(base, cached, log=vectors)
        with Memory(folder / "store", embedder=timed) as lite:
            log(f"[embedded] ingesting {n}")
            out["embedded"] = {"ingest": ingest(lite, n, vectors)}
            timed.log = None  # queries from here on are not stored units
            log(f"[embedded] {out['embedded']['ingest']}")
            out["embedded"].update(measure(lite, qs))
        out["embedded"]["dense"] = perf_dense_recall(vectors, qvecs[:50], [u for _, u in qs[:50]])
        log(f"[embedded] {json.dumps({k: v for k, v in out['embedded'].items() if k != 'ingest'})[:400]}")
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    with database_server(url) as databases:
        assert databases is not None
        db = databases.fresh()
        with Memory(url=db, embedder=TimedEmbedder(base, cached)) as pg:
            log(f"[postgresql] ingesting {n}")
            out["postgresql"] = {"ingest": ingest(pg, n)}
            log(f"[postgresql] {out['postgresql']['ingest']}")
            out["postgresql"]["hnsw_build"] = hnsw_build(db)
            log(f"[postgresql] hnsw {out['postgresql']['hnsw_build']}")
            out["postgresql"].update(measure(pg, qs))
        out["postgresql"]["dense"] = pg_dense_recall(db, qvecs[:50], [u for _, u in qs[:50]])
        databases.drop(db)
    e, p = out["embedded"], out["postgresql"]
    out["ratios_postgresql_over_embedded"] = {
        "ingest_units_per_s": round(p["ingest"]["units_per_s"] / e["ingest"]["units_per_s"], 3),
        **{f"search_{k}_p50": round(p[f"search_{k}"]["p50_ms"] / e[f"search_{k}"]["p50_ms"], 3)
           for k in ("global", "user")},
    }
    return out


def table(doc: dict[str, Any]) -> str:
    e, p = doc["embedded"], doc["postgresql"]
    rows = [
        "| backend | ingest units/s | HNSW build s (MiB per 1M units) | search p50 / p95 ms, global | scoped to a user "
        "| dense recall@20 global / user |",
        "|---|---|---|---|---|---|",
    ]
    for name, r in (("embedded (SQLite + FAISS + bm25s)", e), ("PostgreSQL + pgvector", p)):
        build = (f"{r['hnsw_build']['seconds']} ({r['hnsw_build']['index_mib_per_million_units']})"
                 if "hnsw_build" in r else "n/a (in-process FAISS)")
        rows.append(f"| {name} | {r['ingest']['units_per_s']} | {build} | {r['search_global']['p50_ms']} / "
                    f"{r['search_global']['p95_ms']} | {r['search_user']['p50_ms']} / {r['search_user']['p95_ms']} | "
                    f"{r['dense']['recall_global']} / {r['dense']['recall_user']} |")
    ratios = doc["ratios_postgresql_over_embedded"]
    rows.append("")
    rows.append("PostgreSQL over embedded, same run: " + ", ".join(f"{k} {v}" for k, v in ratios.items()) + ".")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks pg-scale", description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--url", default="pgserver", help="a server that lets this user create databases, "
                        "or pgserver (default: a private one for the run)")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/postgres"))
    args = parser.parse_args(argv)
    load_before = os.getloadavg()
    started = time.perf_counter()
    result = run(args.size, args.url, args.queries, log=lambda line: print(line, file=sys.stderr, flush=True))
    shown = ["--size", str(args.size), "--queries", str(args.queries), "--url",
             args.url if args.url == "pgserver" else "postgresql://..."]
    doc = {"benchmark": "python -m benchmarks pg-scale", "command": "python -m benchmarks pg-scale " + " ".join(shown),
           "date": datetime.now(timezone.utc).isoformat(timespec="seconds"), "machine": machine(),
           "versions": versions(), "load_average_before": [round(x, 2) for x in load_before],
           "load_average_after": [round(x, 2) for x in os.getloadavg()],
           "seconds": round(time.perf_counter() - started, 1), **result}
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / f"pg-scale-{args.size}.json"
    path.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    md = args.out / f"pg-scale-{args.size}.md"
    md.write_text(f"# PostgreSQL beside the embedded backend, {args.size:,} synthetic units\n\n`{doc['command']}`\n\n"
                  f"{doc['date']}, load average {doc['load_average_before']} -> {doc['load_average_after']}, "
                  f"{doc['seconds']} s.\n\n{table(doc)}\n", encoding="utf-8")
    print(f"wrote {path} and {md}")
    print(table(doc))


if __name__ == "__main__":
    main()
