"""``CandidateSearch`` in SQL: pgvector HNSW for dense k-NN, BM25 from term statistics for text.

Filters (scope, supersession, ``as_of``) are SQL predicates. HNSW filters
after its graph walk, so a narrow filter (a small user among large ones)
could come back short: a search counts what its filter admits and ranks a
narrow set exactly (through the scope index), and a short approximate
answer falls back to the exact one. Nothing lives in the process, so there
is nothing to sync, save or lose.

BM25 uses bm25s's defaults (Lucene variant, k1 = 1.5, b = 0.75) over every
unit, with the counters kept in each write's transaction.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from omnimem.store.base import SearchFilter, Vector
from omnimem.store.postgres.store import PostgresStore, scope_sql
from omnimem.store.postgres.unit_rows import trust_sql

K1, B = 1.5, 0.75
EXACT_BELOW = 20_000  # a filter admitting fewer units is ranked exactly (cheaper than HNSW and never short)
CANDIDATES = 2  # a text search filters the best CANDIDATES x k units by their rows (more only when too few pass)
EF_SEARCH_FLOOR = 160  # HNSW candidate list, chosen by measured recall@20: see docs/postgres.md "How it scales"


def ef_search(k: int) -> int:
    """``hnsw.ef_search`` for a k-NN query: the measured floor, at least 2k, at most pgvector's 1000."""
    return min(1000, max(EF_SEARCH_FLOOR, 2 * k))


class PgSearch:
    """Search over a :class:`PostgresStore`, in the database."""

    def __init__(self, store: PostgresStore) -> None:
        self.store = store

    def within(self, where: SearchFilter) -> PgCandidates:
        return PgCandidates(self.store, where)

    def sync(self) -> None:
        """Nothing to catch up with: every search reads the committed state."""

    def added(self, rows: Sequence[tuple[int, Any]], vectors: Any, write_seq: int, writes: int = 1) -> None:
        """The units are indexed by their own transaction (HNSW and postings)."""

    def removed(self, rids: Sequence[int], write_seq: int) -> None:
        """Their rows went in their own transaction."""

    def save(self) -> None:
        """Nothing is kept outside the database."""

    def sizes(self) -> dict[str, int]:
        with self.store._read() as conn:
            units, postings = conn.execute("SELECT (SELECT COUNT(*) FROM units), "
                                           "(SELECT COUNT(DISTINCT rid) FROM terms)").fetchone()
        return {"dense": int(units), "sparse": int(postings)}


def filter_sql(where: SearchFilter, prefix: str = "") -> tuple[str, list[Any]]:
    """The SQL predicate of a search filter over ``units`` (aliased by ``prefix``)."""
    sql, args = scope_sql(where.scope, exact=False, prefix=prefix)
    if where.as_of is not None:
        at = where.as_of.timestamp()
        sql += f" AND {prefix}record_ts <= %s"
        args.append(at)
        if not where.include_superseded:
            sql += f" AND ({prefix}superseded_ts IS NULL OR {prefix}superseded_ts > %s)"
            args.append(at)
    elif not where.include_superseded:
        sql += f" AND {prefix}superseded_by IS NULL"
    if where.min_trust is not None:
        trusted, levels = trust_sql(where.min_trust, prefix)
        sql += f" AND {trusted}"
        args.extend(levels)
    return sql, args


def scored_sql(user: str | None) -> str:
    """The CTEs that score units by BM25 (``scored``: rid, tenant, score), for the arguments of
    :meth:`PgCandidates.text`: the query's terms, their counts, K1, B, B, and the user's tenant when ``user``.

    Each query term's weight (its count x idf) is computed once and materialised, and each term's postings are
    read by an index scan of their own (``LATERAL ... OFFSET 0`` keeps the subquery from being flattened into
    a join the planner could run over all postings: at 100k units it hashed them as a join's build side,
    misjudging their number, and spilled the hash to disk; written as a plain join to the weights, it merged
    the whole posting index). The float8 steps are those of summing ``count * idf * tf / (...)`` per posting,
    so the float4 scores are unchanged.
    """
    own = "" if user is None else "AND p.tenant = %s"  # one tenant's postings: the (tenant, term) index
    return f"""WITH idf AS MATERIALIZED (
                    SELECT q.term, q.weight * ln(1 + (c.n - d.df + 0.5) / (d.df + 0.5)) AS idf, c.avgdl
                    FROM unnest(%s::text[], %s::int[]) AS q(term, weight) JOIN term_df d ON d.term = q.term
                         CROSS JOIN (SELECT docs::float8 AS n, GREATEST(doc_len, 1)::float8 / GREATEST(docs, 1) AS avgdl
                                     FROM counters) AS c
                    WHERE d.df > 0),
                scored AS (SELECT t.rid, t.tenant,
                                  SUM(idf.idf * t.tf / (t.tf + %s * (1 - %s + %s * t.doc_len / idf.avgdl))
                                      )::float4 AS score
                           FROM idf CROSS JOIN LATERAL (
                                SELECT p.rid, p.tenant, p.tf, p.doc_len FROM terms p
                                WHERE p.term = idf.term {own} OFFSET 0) AS t
                           GROUP BY t.rid, t.tenant)"""


class PgCandidates:
    """One search's filter, as SQL."""

    together = True  # dense and text are two queries, each on its own pooled connection: run side by side

    def __init__(self, store: PostgresStore, where: SearchFilter) -> None:
        self.store = store
        self.where = where
        self.sql, self.args = filter_sql(where)
        self._admitted: int | None = None

    def _narrow(self, conn: Any) -> bool:
        """Whether the filter admits few enough units to rank them exactly."""
        if self._admitted is None:
            if self.where.scope.is_empty():
                self._admitted = EXACT_BELOW  # unscoped: HNSW, with the exact fallback when short
            else:
                self._admitted = int(conn.execute(
                    f"SELECT COUNT(*) FROM (SELECT 1 FROM units WHERE {self.sql} LIMIT %s) AS n",
                    [*self.args, EXACT_BELOW]).fetchone()[0])
        return self._admitted < EXACT_BELOW

    def dense(self, vector: Vector, k: int) -> list[tuple[int, float]]:
        if k <= 0:
            return []
        q = np.asarray(vector, dtype=np.float32).reshape(-1)
        with self.store._read() as conn:
            exact = self._narrow(conn)
            if not exact:
                with conn.transaction():  # ef_search holds for this transaction (the pool is in autocommit)
                    conn.execute("SELECT set_config('hnsw.ef_search', %s, true)", (str(ef_search(k)),))
                    found = self._ranked(conn, q, k, exact=False)
                if len(found) >= k:
                    return found
            return self._ranked(conn, q, k, exact=True)

    def _ranked(self, conn: Any, q: Any, k: int, *, exact: bool) -> list[tuple[int, float]]:
        # The HNSW index serves ORDER BY on the distance alone (a second sort key makes the planner scan the
        # table); ``+ 0`` hides the operator, so the exact ranking never walks the graph. Ties by row id here.
        order = "(embedding <#> %s) + 0, rid" if exact else "embedding <#> %s"
        rows = conn.execute(f"SELECT rid, -(embedding <#> %s) FROM units WHERE {self.sql} ORDER BY {order} "
                            "LIMIT %s", [q, *self.args, q, k]).fetchall()
        return sorted(((int(rid), float(score)) for rid, score in rows), key=lambda r: (-r[1], r[0]))

    def text(self, query: str, k: int) -> list[tuple[int, float]]:
        """BM25's best ``k`` units the filter admits, best first (ties: lower row id first).

        Scores are summed from the postings alone (each carries its unit's length); unit rows are read only for
        the best ``CANDIDATES`` x ``k`` of them, to apply the filter. When the filter leaves fewer than ``k`` of
        those and there were more, the exact query (every posting's unit filtered) runs instead, so the answer
        is the same either way. Scores are rounded to float4, as the embedded index scores: a sum's last bit
        depends on the order the plan adds the terms in, and ties must not.
        """
        terms = self.store.terms.tokenize([query])[0] if query.strip() else []
        if not terms or k <= 0:
            return []
        weights: dict[str, int] = {}
        for term in terms:  # a repeated query term counts again, as in bm25s
            weights[term] = weights.get(term, 0) + 1
        sql, args = filter_sql(self.where, "u.")
        user = self.where.scope.user_id
        common = [list(weights), list(weights.values()), K1, B, B, *([user] if user else [])]
        head = scored_sql(user)
        limit = CANDIDATES * k
        with self.store._read() as conn:
            rows = conn.execute(
                f"""{head}, best AS (SELECT * FROM scored ORDER BY score DESC, rid LIMIT %s)
                    SELECT u.rid, best.score, (SELECT COUNT(*) FROM best) FROM best
                    JOIN units u ON u.tenant = best.tenant AND u.rid = best.rid
                    WHERE {sql} ORDER BY best.score DESC, u.rid LIMIT %s""",
                [*common, limit, *args, k]).fetchall()
            if len(rows) < k and (not rows or rows[0][2] >= limit) and \
                    (rows or self._had_candidates(conn, head, common, limit)):
                rows = conn.execute(  # the filter left too few of the best: filter every candidate
                    f"""{head} SELECT u.rid, scored.score FROM scored
                        JOIN units u ON u.tenant = scored.tenant AND u.rid = scored.rid
                        WHERE {sql} ORDER BY scored.score DESC, u.rid LIMIT %s""", [*common, *args, k]).fetchall()
        return [(int(row[0]), float(row[1])) for row in rows if row[1] > 0]

    @staticmethod
    def _had_candidates(conn: Any, head: str, common: list[Any], limit: int) -> bool:
        """Whether the query's terms score at least ``limit`` units (a first round that kept none of them)."""
        return int(conn.execute(f"{head} SELECT COUNT(*) FROM (SELECT 1 FROM scored LIMIT %s) AS n",
                                [*common, limit]).fetchone()[0]) >= limit

    def images(self, vector: Vector, model: str, k: int) -> list[tuple[int, float]]:
        q = np.asarray(vector, dtype=np.float32).reshape(-1)
        sql, args = filter_sql(self.where, "u.")
        with self.store._read() as conn:
            rows = conn.execute(
                f"""SELECT u.rid, -(c.vector <#> %s) AS score FROM clip_vectors c
                    JOIN units u ON u.tenant = c.tenant AND u.id = c.unit_id WHERE c.model = %s AND {sql}
                    ORDER BY score DESC, u.rid LIMIT %s""", [q, model, *args, k]).fetchall()
        return [(int(rid), float(score)) for rid, score in rows]

    def admitted(self, rids: Sequence[int]) -> set[int]:
        if not rids:
            return set()
        with self.store._read() as conn:
            return {int(r[0]) for r in conn.execute(f"SELECT rid FROM units WHERE rid = ANY(%s) AND {self.sql}",
                                                    [[int(r) for r in rids], *self.args])}
