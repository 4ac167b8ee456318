"""PostgreSQL beside the embedded backend at one size, in one run: ingest, HNSW build, search, recall.

``python -m benchmarks pg-scale --size 100000 --url pgserver`` ingests the
same deterministic synthetic dialogue (:mod:`benchmarks.harness.synthetic`, the
``synthetic`` bag-of-words embedder, so the numbers are omnimem's and the
database's cost, not a model's) through ``Memory.add_dialogue`` into an
embedded store, and fills a PostgreSQL database either the same way
(``--load add_dialogue``) or by a bulk copy of the embedded store
(``--load bulk``: :class:`omnimem.store.postgres.bulk.BulkLoader`, binary
``COPY`` with the HNSW index built once after the load; the JSON's
``postgresql_filled_by`` and the table say which). Then, on both:

- ingest units/s (and PostgreSQL over embedded, the ratio that survives a loaded machine); with
  ``--tail N``, N more turns through ``add_dialogue`` into both full stores (the index in place);
- PostgreSQL's HNSW build time over all units, and the index's size per unit;
- ``Memory.search`` p50/p95 (query vectors precomputed), global and scoped to a user; with ``--warm N``,
  after N other questions (global and scoped) have warmed each store, so the timed first pass asks questions
  the process has not seen, in a process that has answered others (pages read, caches filled), as a service
  does; without it the first pass also pays each store's start (the committed runs before stop 46);
- dense recall@20 of each backend's candidate search against exact inner product, and for
  PostgreSQL the global recall and SQL time at several ``hnsw.ef_search`` values.

Writes ``pg-scale-<size>.json`` and ``.md`` (the table) under ``--out``."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.harness.backends import database_server
from benchmarks.harness.perf import K, TimedEmbedder, VectorLog, machine, measure_search, versions
from benchmarks.harness.perf import dense_recall as perf_dense_recall
from benchmarks.harness.synthetic import BagOfWordsEmbedder, queries, sessions

EF_SWEEP = (40, 80, 160, 320, 640)


def ingest(mem: Any, n: int, vectors: VectorLog | None = None, seed: int = 0) -> dict[str, float]:
    start = time.perf_counter()
    stored = 0
    for user, session, turns in sessions(n, seed):
        if vectors is not None:
            vectors.user = user
        stored += sum(r.accepted for r in mem.add_dialogue(turns, user_id=user, session_id=session))
    seconds = time.perf_counter() - start
    return {"turns": n, "stored": stored, "seconds": round(seconds, 2), "units_per_s": round(n / seconds, 1)}


def index_sizes(url: str) -> dict[str, Any]:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        size = int(conn.execute("SELECT pg_relation_size('units_embedding_hnsw')").fetchone()[0])
        units = int(conn.execute("SELECT COUNT(*) FROM units").fetchone()[0])
        table = int(conn.execute("SELECT pg_total_relation_size('units')").fetchone()[0])
        terms = int(conn.execute("SELECT pg_total_relation_size('terms')").fetchone()[0])
        definition = conn.execute("SELECT indexdef FROM pg_indexes WHERE indexname = 'units_embedding_hnsw'"
                                  ).fetchone()[0]
    return {"definition": definition, "index_bytes": size, "index_bytes_per_unit": round(size / units, 1),
            "index_mib_per_million_units": round(size / units * 1e6 / 2**20, 1),
            "units_table_bytes_per_unit": round(table / units, 1), "terms_bytes_per_unit": round(terms / units, 1)}


def hnsw_build(url: str, maintenance_work_mem: str, workers: int | None) -> dict[str, Any]:
    """Drop and rebuild the HNSW index over every unit (what a bulk load or a re-embed costs)."""
    import psycopg

    from omnimem.store.postgres.bulk import build_vector_index

    with psycopg.connect(url) as conn:
        definition = conn.execute("SELECT indexdef FROM pg_indexes WHERE indexname = 'units_embedding_hnsw'"
                                  ).fetchone()[0]
        conn.execute("DROP INDEX units_embedding_hnsw")
        seconds = build_vector_index(conn, maintenance_work_mem=maintenance_work_mem, parallel_workers=workers)
        conn.commit()
    assert index_sizes(url)["definition"] == definition
    return {"seconds": round(seconds, 2), **index_sizes(url), "maintenance_work_mem": maintenance_work_mem,
            "parallel_workers": workers}


def bulk_copy(lite: Any, pg: Any, maintenance_work_mem: str, workers: int | None) -> dict[str, Any]:
    """Copy the embedded store's units (vectors included) into PostgreSQL with :class:`BulkLoader`."""
    from omnimem.store.postgres.bulk import BulkLoader

    start = time.perf_counter()
    with BulkLoader(pg, maintenance_work_mem=maintenance_work_mem, parallel_workers=workers) as load:
        load.copy_from(lite)
        copied = time.perf_counter() - start
    total = time.perf_counter() - start
    assert load.build_seconds is not None
    return {"units": load.loaded, "copy_seconds": round(copied, 2), "copy_units_per_s": round(load.loaded / copied, 1),
            "hnsw_build_seconds": round(load.build_seconds, 2), "seconds": round(total, 2),
            "units_per_s": round(load.loaded / total, 1)}


def pg_dense_recall(url: str, qvecs: np.ndarray, users: list[str],
                    sweep: tuple[int, ...] = EF_SWEEP) -> dict[str, Any]:
    """recall@K of pgvector's HNSW (the backend's index and ``ef_search``) against exact inner product, in SQL.

    Scoped searches below 20,000 units never use HNSW (the backend ranks them exactly), so ``user`` is
    the exact ranking against itself, measured the same way for the record. ``ef_sweep`` measures global
    recall and the mean query time at other ``hnsw.ef_search`` values (what chose the backend's floor).
    """
    import psycopg
    from pgvector.psycopg import register_vector

    from omnimem.store.postgres.search import ef_search

    out: dict[str, Any] = {"k": K, "ef_search": ef_search(K)}
    with psycopg.connect(url) as conn:
        register_vector(conn)
        exact: dict[str, list[set[int]]] = {}
        for label, scoped in (("global", False), ("user", True)):
            where, args = ("WHERE user_id = %s", True) if scoped else ("", False)
            exact[label] = [{r[0] for r in conn.execute(
                f"SELECT rid FROM units {where} ORDER BY (embedding <#> %s) + 0 LIMIT %s",
                [*([user] if args else []), q, K])} for q, user in zip(qvecs, users)]

        def approx(label: str, ef: int) -> tuple[float, float]:
            conn.execute("SELECT set_config('hnsw.ef_search', %s, false)", (str(ef),))
            scoped = label == "user"
            where = "WHERE user_id = %s" if scoped else ""
            order = "(embedding <#> %s) + 0" if scoped else "embedding <#> %s"
            hits, start = 0, time.perf_counter()
            for q, user, want in zip(qvecs, users, exact[label]):
                got = {r[0] for r in conn.execute(f"SELECT rid FROM units {where} ORDER BY {order} LIMIT %s",
                                                  [*([user] if scoped else []), q, K])}
                hits += len(got & want)
            return round(hits / (K * len(users)), 4), round((time.perf_counter() - start) / len(users) * 1000, 3)

        for label in ("global", "user"):
            out[f"recall_{label}"] = approx(label, out["ef_search"])[0]
        out["ef_sweep"] = [dict(zip(("ef_search", "recall_global", "ms_per_query"), (ef, *approx("global", ef))))
                           for ef in sweep]
    return out


def measure(mem: Any, qs: list[tuple[str, str]], rounds: int,
            warm: Sequence[tuple[str, str]] = ()) -> dict[str, Any]:
    """Search p50/p95 over ``qs``, global then scoped, after a warm-up search and the ``warm`` questions.

    Rounds after the first ask the same questions again, which the stores' caches of rows and lines answer in
    part: the first round is the one that compares backends on new questions."""
    result: dict[str, Any] = {}
    mem.search(qs[0][0])  # warm-up: the embedded backend builds BM25 here
    for question, user in warm:
        mem.search(question)
        mem.search(question, user_id=user)
    for scoped in (False, True):
        key = "user" if scoped else "global"
        result[f"search_{key}"] = measure_search(mem, qs, scoped, 1, rounds)
    return result


def run(n: int, url: str, n_queries: int, *, load: str = "add_dialogue", tail: int = 0, rounds: int = 3,
        maintenance_work_mem: str = "1GB", workers: int | None = None, warm: int = 0,
        log: Any = print) -> dict[str, Any]:
    """Both backends at ``n`` units; PostgreSQL filled by ``add_dialogue`` or by a bulk copy of the embedded store.

    ``tail`` more turns (another seed) then go through ``add_dialogue`` into both full stores: ingest speed
    at full size, with the HNSW index in place.
    """
    from omnimem import Memory

    base = BagOfWordsEmbedder()
    qs = queries(n_queries, n, 1)
    timed_questions = {q for q, _ in qs}
    warm_qs = [(q, u) for q, u in queries(warm, n, 2) if q not in timed_questions]
    qvecs = base.embed([q for q, _ in qs])
    cached = {q: v for (q, _), v in zip(qs, qvecs)}
    if warm_qs:
        cached.update(zip((q for q, _ in warm_qs), base.embed([q for q, _ in warm_qs])))
    out: dict[str, Any] = {"size": n, "embedder": base.name, "queries": n_queries, "k": K, "rounds": rounds,
                           "warm_questions": len(warm_qs), "postgresql_filled_by": load, "tail_turns": tail}
    folder = Path(tempfile.mkdtemp(prefix="omnimem-pg-scale-"))
    try:
        vectors = VectorLog(folder / "vectors", base.dim)  # what the embedded index holds, for its recall
        timed = TimedEmbedder(base, cached, log=vectors)
        with Memory(folder / "store", embedder=timed) as lite:
            log(f"[embedded] ingesting {n}")
            out["embedded"] = {"ingest": ingest(lite, n, vectors)}
            timed.log = None  # queries from here on are not stored units
            log(f"[embedded] {out['embedded']['ingest']}")
            out["embedded"].update(measure(lite, qs, rounds, warm_qs))
            out["embedded"]["dense"] = perf_dense_recall(vectors, qvecs[:50], [u for _, u in qs[:50]])
            log(f"[embedded] {json.dumps({k: v for k, v in out['embedded'].items() if k != 'ingest'})[:400]}")
            with database_server(url) as databases:
                assert databases is not None
                db = databases.fresh()
                with Memory(url=db, embedder=TimedEmbedder(base, cached)) as pg:
                    if load == "bulk":
                        log(f"[postgresql] bulk copy of {n}")
                        copied = bulk_copy(lite, pg, maintenance_work_mem, workers)
                        out["postgresql"] = {"bulk_load": copied, "hnsw_build": {
                            "seconds": copied["hnsw_build_seconds"], **index_sizes(db),
                            "maintenance_work_mem": maintenance_work_mem, "parallel_workers": workers,
                            "during": "the bulk load"}}
                    else:
                        log(f"[postgresql] ingesting {n}")
                        out["postgresql"] = {"ingest": ingest(pg, n)}
                        out["postgresql"]["hnsw_build"] = hnsw_build(db, maintenance_work_mem, workers)
                    log(f"[postgresql] {json.dumps(out['postgresql'])[:600]}")
                    out["postgresql"].update(measure(pg, qs, rounds, warm_qs))
                    log(f"[postgresql] search {json.dumps(out['postgresql']['search_global'])[:300]}")
                    out["postgresql"]["dense"] = pg_dense_recall(db, qvecs[:50], [u for _, u in qs[:50]])
                    log(f"[postgresql] dense {out['postgresql']['dense']}")
                    if tail:
                        for name, mem in (("embedded", lite), ("postgresql", pg)):
                            out[name]["ingest_onto_full_store"] = ingest(mem, tail, seed=1)
                            log(f"[{name}] onto the full store {out[name]['ingest_onto_full_store']}")
                databases.drop(db)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    e, p = out["embedded"], out["postgresql"]
    ratios: dict[str, float] = {}
    for key in ("ingest", "ingest_onto_full_store"):
        if key in e and key in p:
            ratios[f"{key}_units_per_s"] = round(p[key]["units_per_s"] / e[key]["units_per_s"], 3)
    for k in ("global", "user"):
        ratios[f"search_{k}_p50"] = round(p[f"search_{k}"]["p50_ms"] / e[f"search_{k}"]["p50_ms"], 3)
    out["ratios_postgresql_over_embedded"] = ratios
    return out


def table(doc: dict[str, Any]) -> str:
    e, p = doc["embedded"], doc["postgresql"]
    tail = doc.get("tail_turns", 0)
    rows = [
        "| backend | filled by (units/s) | add_dialogue onto the full store, units/s "
        "| HNSW build s (MiB per 1M units) | search p50 / p95 ms, global | scoped to a user "
        "| dense recall@20 global / user |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, r in (("embedded (SQLite + FAISS + bm25s)", e), ("PostgreSQL + pgvector", p)):
        filled = (f"bulk COPY of the embedded store ({r['bulk_load']['units_per_s']}, index build included)"
                  if "bulk_load" in r else f"add_dialogue ({r['ingest']['units_per_s']})")
        onto = (f"{r['ingest_onto_full_store']['units_per_s']} ({tail} turns)"
                if "ingest_onto_full_store" in r else "not measured")
        build = (f"{r['hnsw_build']['seconds']} ({r['hnsw_build']['index_mib_per_million_units']})"
                 if "hnsw_build" in r else "n/a (in-process FAISS)")
        rows.append(f"| {name} | {filled} | {onto} | {build} | {r['search_global']['p50_ms']} / "
                    f"{r['search_global']['p95_ms']} | {r['search_user']['p50_ms']} / {r['search_user']['p95_ms']} | "
                    f"{r['dense']['recall_global']} / {r['dense']['recall_user']} |")
    ratios = doc["ratios_postgresql_over_embedded"]
    rows.append("")
    rows.append("PostgreSQL over embedded, same run: " + ", ".join(f"{k} {v}" for k, v in ratios.items()) + ".")
    sweep = p["dense"].get("ef_sweep")
    if sweep:
        rows.append("")
        rows.append(f"PostgreSQL HNSW global recall@{p['dense']['k']} by `hnsw.ef_search` (the backend uses "
                    f"{p['dense']['ef_search']} for k = {p['dense']['k']}):")
        rows.append("")
        rows.append("| ef_search | recall@20 global | ms per k-NN query (SQL alone) |")
        rows.append("|---|---|---|")
        rows.extend(f"| {r['ef_search']} | {r['recall_global']} | {r['ms_per_query']} |" for r in sweep)
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks pg-scale", description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3, help="timed passes over the queries (the median is kept)")
    parser.add_argument("--load", choices=("add_dialogue", "bulk"), default="add_dialogue",
                        help="how PostgreSQL is filled: Memory.add_dialogue like the embedded store, or a bulk "
                        "COPY of the embedded store (omnimem.store.postgres.bulk.BulkLoader)")
    parser.add_argument("--tail", type=int, default=0, help="turns then added through add_dialogue to both full "
                        "stores (ingest speed at full size)")
    parser.add_argument("--warm", type=int, default=0, help="other questions each store answers before the "
                        "timed ones (global and scoped), so the first timed pass is new questions to a warm process")
    parser.add_argument("--maintenance-work-mem", default="1GB", help="for the HNSW build")
    parser.add_argument("--workers", type=int, default=None, help="max_parallel_maintenance_workers for the build")
    parser.add_argument("--url", default="pgserver", help="a server that lets this user create databases, "
                        "or pgserver (default: a private one for the run)")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results"))
    args = parser.parse_args(argv)
    if args.warm < 0:
        parser.error(f"--warm must be >= 0, not {args.warm}")
    load_before = os.getloadavg()
    started = time.perf_counter()
    result = run(args.size, args.url, args.queries, load=args.load, tail=args.tail, rounds=args.rounds,
                 maintenance_work_mem=args.maintenance_work_mem, workers=args.workers, warm=args.warm,
                 log=lambda line: print(line, file=sys.stderr, flush=True))
    shown = ["--size", str(args.size), "--queries", str(args.queries), "--rounds", str(args.rounds),
             "--load", args.load, "--tail", str(args.tail), *(["--warm", str(args.warm)] if args.warm else []),
             "--maintenance-work-mem", args.maintenance_work_mem,
             *(["--workers", str(args.workers)] if args.workers is not None else []),
             "--url", args.url if args.url == "pgserver" else "postgresql://..."]
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
