"""Bulk loading into PostgreSQL: units and postings by ``COPY``, the HNSW index built once after the load.

Adding a unit to a live HNSW index walks the graph (``ef_construction``)
and rewrites its neighbours' pages; on this machine that is most of what a
``Memory.add`` costs on PostgreSQL (``benchmarks/results/pg-ingest-cost.md``). For a
large load (moving an embedded store to PostgreSQL, restoring a backup,
seeding a benchmark) it is far cheaper to drop the index, ``COPY`` the rows
and build the index once, in memory and in parallel::

    with BulkLoader(Memory(url=...), maintenance_work_mem="3GB") as load:
        load.copy_from(Memory("./mem"))        # or load.units(batch): units that carry their vectors
    load.build_seconds                         # the index build, measured

Each ``units`` call is one transaction (units, postings, document
frequencies, counters and an ``import`` audit event commit together), so a
failed batch leaves nothing half-written and the batches before it stay.
While the index is away searches stay correct (pgvector ranks exactly, by a
scan) but slow. Recovery: the store records the index's definition under
``vector_index`` in ``meta`` before it drops the index; a process that dies
before the build leaves that mark, and the next writable open of the store
builds the index (``PostgresStore._resume_vector_index``), so no store is left
without its index, and the index keeps its graph parameters.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import Any

import numpy as np

from omnimem.errors import InvalidInputError, StoreError
from omnimem.mau import MAU, Scope
from omnimem.store.audit import AuditEvent
from omnimem.store.base import UnitStore
from omnimem.store.cold import check_ref, content_ref
from omnimem.store.postgres import governance_sql as gov
from omnimem.store.postgres.locks import lock_everything
from omnimem.store.postgres.schema import INDEX, INDEX_SQL, build_vector_index
from omnimem.store.postgres.schema import VECTOR_INDEX_MARK as _MARK
from omnimem.store.postgres.store import PostgresStore

__all__ = ["BulkLoader", "build_vector_index"]

_COPY_COLUMNS = ("tenant, doc_len, rid, id, summary, modality, speaker, event_time, record_time, user_id, agent_id, "
                 "session_id, prev_id, source_ids, raw_ref, content_hash, metadata, embedding, record_ts, "
                 "superseded_by, superseded_at, superseded_ts, source, trust, surface, actor, origin")
_COPY_TYPES = ["text", "int4", "int8", *["text"] * 14, "vector", "float8", "text", "text", "float8", *["text"] * 5]


class BulkLoader:
    """Loads units that already carry their vectors with ``COPY``; the HNSW index is built on exit."""

    def __init__(self, target: PostgresStore | Any, *, maintenance_work_mem: str = "1GB",
                 parallel_workers: int | None = None, actor: str = "omnimem") -> None:
        """``target``: a :class:`PostgresStore`, or a ``Memory(url="postgresql://...")`` (its store)."""
        store = target if isinstance(target, PostgresStore) else getattr(target, "store", None)
        if not isinstance(store, PostgresStore):
            raise StoreError("a bulk load goes into a PostgreSQL store: pass Memory(url='postgresql://...') "
                             "or its PostgresStore")
        if store.read_only:
            raise StoreError("a bulk load needs a writable store; this one is open read-only")
        meta = store.meta()
        if meta is None:
            raise StoreError("record the store's embedder first (open it with Memory(url=..., embedder=...))")
        self.store = store
        self.dim = meta.dim
        self.maintenance_work_mem = maintenance_work_mem
        self.parallel_workers = parallel_workers
        self.actor = actor
        self.loaded = 0
        self.build_seconds: float | None = None
        self.definition = INDEX_SQL

    def __enter__(self) -> BulkLoader:
        with self.store._tx("deferring the vector index") as conn:
            row = conn.execute("SELECT indexdef FROM pg_indexes WHERE indexname = %s", (INDEX,)).fetchone()
            if row is None:  # already away: an earlier load died, and its mark holds the definition
                row = conn.execute("SELECT value FROM meta WHERE key = %s", (_MARK,)).fetchone()
            self.definition = str(row[0]) if row else INDEX_SQL
            conn.execute("INSERT INTO meta(key, value) VALUES (%s, %s) ON CONFLICT (key) DO UPDATE "
                         "SET value = excluded.value", (_MARK, self.definition))
            conn.execute(f"DROP INDEX IF EXISTS {INDEX}")
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        """Build the index, also after a failed batch: the batches before it are stored and need it."""
        with self.store._tx("building the vector index") as conn:
            self.build_seconds = build_vector_index(conn, maintenance_work_mem=self.maintenance_work_mem,
                                                    parallel_workers=self.parallel_workers,
                                                    definition=self.definition)
            conn.execute("DELETE FROM meta WHERE key = %s", (_MARK,))
        self._settle()

    def _settle(self) -> None:
        """``VACUUM ANALYZE`` what the load wrote: planner statistics, and the visibility map without which
        text search cannot read postings and unit lengths from its covering indexes alone."""
        self.store.vacuum(("units", "terms", "term_df"), analyze=True, after="the bulk load")

    def units(self, units: Sequence[MAU], raw: Mapping[str, bytes] | None = None) -> int:
        """Store one batch in one transaction; returns how many units it held."""
        if not units:
            return 0
        vectors = [self._vector(u) for u in units]
        store = self.store
        with store._tx(f"bulk-loading {len(units)} unit(s)") as conn:
            lock_everything(conn)  # the load writes postings of many terms: no other writer between its batches
            for ref, data in (raw or {}).items():
                if content_ref(data) != check_ref(ref):
                    raise StoreError(f"cold-tier content does not match its reference {ref}; nothing was stored")
            if raw:
                with conn.cursor() as cur:
                    cur.executemany("INSERT INTO blobs(ref, data) VALUES (%s, %s) ON CONFLICT (ref) DO NOTHING",
                                    list(raw.items()))
            rids = sorted(int(r[0]) for r in conn.execute(
                "SELECT nextval(pg_get_serial_sequence('units', 'rid')) FROM generate_series(1, %s)", (len(units),)))
            rows = list(zip(rids, units))
            tokens = store.terms.tokens(conn, rows)
            with conn.cursor() as cur, cur.copy(f"COPY units ({_COPY_COLUMNS}) FROM STDIN (FORMAT BINARY)") as copy:
                copy.set_types(_COPY_TYPES)  # binary: a vector goes as its float32 bytes, not as text to format
                for (rid, u), words, vector in zip(rows, tokens, vectors):
                    copy.write_row(_copy_row(rid, u, len(words), vector))
            store.terms.copy(conn, [(rid, u.scope) for rid, u in rows], tokens)
            gov.log_event(conn, AuditEvent("import", self.actor, tuple(u.id for u in units), reason="bulk load"))
            store._bump(conn, len(units), sum(len(words) for words in tokens))
        self.loaded += len(units)
        return len(units)

    def copy_from(self, source: UnitStore | Any, *, batch: int = 5000) -> int:
        """Every unit of another store (same embedder), in its row order, with its raw content; returns the count.

        ``source``: a store, or a ``Memory`` (its store). The graph and the audit history are not copied
        (``omnimem export`` / ``import`` carry those).
        """
        source = getattr(source, "store", source)
        ids = source.ids_in_scope(Scope())
        for start in range(0, len(ids), batch):
            units = [u for _, u in sorted(source.get_with_rids(ids[start : start + batch]), key=lambda r: r[0])]
            raw = {u.raw_ref: source.read_raw(u.raw_ref) for u in units if u.raw_ref}
            self.units(units, raw)
        return len(ids)

    def _vector(self, unit: MAU) -> np.ndarray[Any, np.dtype[np.float32]]:
        if unit.embedding is None:
            raise InvalidInputError(f"unit {unit.id} has no vector; a bulk load takes units that carry their "
                                    "vectors (from a store with the same embedder)")
        vector = np.asarray(unit.embedding, dtype=np.float32).reshape(-1)
        if vector.shape[0] != self.dim:
            raise InvalidInputError(f"unit {unit.id} has a {vector.shape[0]}-d vector; this store holds {self.dim}-d")
        return vector


def _copy_row(rid: int, u: MAU, doc_len: int, vector: np.ndarray[Any, np.dtype[np.float32]]) -> tuple[Any, ...]:
    return (
        gov.tenant_of(u.scope), doc_len, rid, u.id, u.summary, u.modality.value, u.speaker,
        u.event_time.isoformat() if u.event_time else None, u.record_time.isoformat(),
        u.scope.user_id, u.scope.agent_id, u.scope.session_id, u.links.prev_id, json.dumps(list(u.source_ids)),
        u.raw_ref, u.content_hash, json.dumps(u.metadata), vector, u.record_time.timestamp(),
        u.superseded_by, u.superseded_at.isoformat() if u.superseded_at else None,
        u.superseded_at.timestamp() if u.superseded_at else None, u.source, u.trust, u.surface, u.actor, u.origin,
    )

