"""BM25 in PostgreSQL before and after ``term_df``: the same queries on the same store, interleaved, in one run.

``python -m benchmarks pg-text-sql --size 100000`` builds the synthetic store
of ``pg-scale`` (embedded, through ``Memory.add_dialogue``), copies it into a
private PostgreSQL (``BulkLoader``), then runs every query's text search
twice, alternating: with the document-frequency CTE the backend used before
migration 5 (it counts every posting of each query term at query time), and
with the backend's own SQL (:meth:`PgCandidates.text`, which reads ``term_df``).
Both must return the same units with the same scores, and ``term_df`` must
equal the counts of the postings (both checked); the ratio of their
times is what survives a loaded machine. Writes ``pg-text-sql-<size>.json``
and ``.md`` under ``--out``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from contextlib import closing
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from benchmarks.harness.backends import database_server
from benchmarks.harness.perf import K, machine, versions
from benchmarks.harness.synthetic import BagOfWordsEmbedder, queries
from benchmarks.postgres.pg_scale import bulk_copy, ingest

BEFORE = """WITH q(term, weight) AS (SELECT * FROM unnest(%s::text[], %s::int[])),
     c AS (SELECT docs::float8 AS n, GREATEST(doc_len, 1)::float8 / GREATEST(docs, 1) AS avgdl FROM counters),
     df AS (SELECT t.term, COUNT(*)::float8 AS df FROM terms t JOIN q ON q.term = t.term GROUP BY t.term)
SELECT u.rid, SUM(q.weight * ln(1 + (c.n - df.df + 0.5) / (df.df + 0.5))
                  * t.tf / (t.tf + %s * (1 - %s + %s * u.doc_len / c.avgdl))) AS score
FROM q JOIN df ON df.term = q.term CROSS JOIN c
     JOIN terms t ON t.term = q.term {own}
     JOIN units u ON u.tenant = t.tenant AND u.rid = t.rid
WHERE {where}
GROUP BY u.rid ORDER BY score DESC, u.rid LIMIT %s"""
"""The text search SQL before migration 5 (git history of omnimem/store/postgres/search.py)."""


def _before(conn: Any, where: Any, query: str, k: int) -> list[tuple[int, float]]:
    from omnimem.index.sparse import tokenize
    from omnimem.store.postgres.search import K1, B, filter_sql

    weights: dict[str, int] = {}
    for term in tokenize([query])[0]:
        weights[term] = weights.get(term, 0) + 1
    if not weights:
        return []
    sql, args = filter_sql(where, "u.")
    user = where.scope.user_id
    own = "" if user is None else "AND t.tenant = %s"
    rows = conn.execute(BEFORE.format(own=own, where=sql),
                        [list(weights), list(weights.values()), K1, B, B, *([user] if user else []), *args,
                         k]).fetchall()
    return [(int(rid), float(score)) for rid, score in rows if score > 0]


def _same_ranking(before: list[tuple[int, float]], after: list[tuple[int, float]], query: str) -> None:
    """The same scores rank by rank, and the same units above the last score (the sum of a unit's terms may
    be added up in another order by another plan, so equal scores can differ in the last bits)."""
    assert len(before) == len(after), query
    assert all(abs(a[1] - b[1]) < 1e-9 for a, b in zip(before, after)), query
    edge = before[-1][1] if before else 0.0
    assert {r for r, s in before if s - edge > 1e-9} == {r for r, s in after if s - edge > 1e-9}, query


def _df_is_exact(conn: Any) -> int:
    """``term_df`` holds exactly the document frequencies counted from the postings; returns the terms."""
    wrong = conn.execute("SELECT COUNT(*) FROM (SELECT term, COUNT(*) AS n FROM terms GROUP BY term) c "
                         "FULL JOIN term_df d USING (term) WHERE c.n IS DISTINCT FROM d.df").fetchone()[0]
    terms = conn.execute("SELECT COUNT(*) FROM term_df").fetchone()[0]
    assert wrong == 0, f"{wrong} terms with a wrong document frequency"
    return int(terms)


def _pcts(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {"p50_ms": round(statistics.median(ordered) * 1000, 3),
            "p95_ms": round(ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))] * 1000, 3)}


def run(n: int, n_queries: int, depth: int, log: Any = print) -> dict[str, Any]:
    import psycopg

    from omnimem import Memory
    from omnimem.mau import Scope
    from omnimem.store.base import SearchFilter
    from omnimem.store.postgres.search import PgCandidates
    from omnimem.store.postgres.store import PostgresStore

    base = BagOfWordsEmbedder()
    qs = queries(n_queries, n, 1)
    out: dict[str, Any] = {"size": n, "queries": n_queries, "depth": depth}
    folder = Path(tempfile.mkdtemp(prefix="omnimem-pg-text-"))
    try:
        with Memory(folder / "store", embedder=base) as lite, database_server("pgserver") as databases:
            assert databases is not None
            log(f"[embedded] ingesting {n}")
            out["embedded_ingest"] = ingest(lite, n)
            db = databases.fresh()
            with Memory(url=db, embedder=base) as pg:
                log("[postgresql] bulk copy")
                out["bulk_load"] = bulk_copy(lite, pg, "1GB", None)
            store = PostgresStore(db)  # the backend's own search, called directly: the BM25 statement alone
            with psycopg.connect(db, autocommit=True) as conn, closing(store):
                out["terms_checked"] = _df_is_exact(conn)
                for label, scoped in (("global", False), ("user", True)):
                    times: dict[str, list[float]] = {"before": [], "after": []}
                    for query, user in qs:
                        where = SearchFilter(Scope(user_id=user if scoped else None))
                        found = {}
                        for name in ("before", "after"):  # interleaved: both see the same load
                            start = time.perf_counter()
                            found[name] = (_before(conn, where, query, depth) if name == "before"
                                           else PgCandidates(store, where).text(query, depth))
                            times[name].append(time.perf_counter() - start)
                        _same_ranking(found["before"], found["after"], query)
                    out[label] = {name: _pcts(values) for name, values in times.items()}
                    out[label]["after_over_before_p50"] = round(
                        out[label]["after"]["p50_ms"] / out[label]["before"]["p50_ms"], 3)
                    log(f"[{label}] {out[label]}")
            databases.drop(db)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return out


def table(doc: dict[str, Any]) -> str:
    rows = ["| search | before (df counted per query) p50 / p95 ms | after (term_df) p50 / p95 ms | after / before p50 |",
            "|---|---|---|---|"]
    for label, name in (("global", "over everyone"), ("user", "scoped to a user")):
        r = doc[label]
        rows.append(f"| {name} | {r['before']['p50_ms']} / {r['before']['p95_ms']} | {r['after']['p50_ms']} / "
                    f"{r['after']['p95_ms']} | {r['after_over_before_p50']} |")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks pg-text-sql", description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--depth", type=int, default=300, help="candidates asked of BM25 (a search's default)")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results"))
    args = parser.parse_args(argv)
    load_before = os.getloadavg()
    started = time.perf_counter()
    result = run(args.size, args.queries, args.depth, log=lambda line: print(line, file=sys.stderr, flush=True))
    command = (f"python -m benchmarks pg-text-sql --size {args.size} --queries {args.queries} "
               f"--depth {args.depth}")
    doc = {"benchmark": "python -m benchmarks pg-text-sql", "command": command,
           "date": datetime.now(timezone.utc).isoformat(timespec="seconds"), "machine": machine(),
           "versions": versions(), "k": K, "load_average_before": [round(x, 2) for x in load_before],
           "load_average_after": [round(x, 2) for x in os.getloadavg()],
           "seconds": round(time.perf_counter() - started, 1), **result}
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / f"pg-text-sql-{args.size}.json"
    path.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    md = args.out / f"pg-text-sql-{args.size}.md"
    md.write_text(f"# BM25 in PostgreSQL before and after term_df, {args.size:,} synthetic units\n\n`{command}`\n\n"
                  f"{doc['date']}, load average {doc['load_average_before']} -> {doc['load_average_after']}, "
                  f"{doc['seconds']} s. Same store, same queries, the two SQL statements interleaved; "
                  f"both return the same units with the same scores (checked).\n\n{table(doc)}\n", encoding="utf-8")
    print(f"wrote {path} and {md}")
    print(table(doc))


if __name__ == "__main__":
    main()
