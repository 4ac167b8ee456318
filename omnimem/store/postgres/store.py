"""``PostgresStore``: the ``UnitStore`` contract on PostgreSQL + pgvector, shared by any number of processes.

Nothing is cached in the process: every read asks the database and every
mutation is one transaction across units, vectors, BM25 postings, blobs, the
graph and the audit log (:meth:`PostgresStore._tx`, the one transaction
helper new tables join). Row ids come from a sequence, so they only grow.

Several processes write at once: every mutation takes its locks in the one order
of :mod:`omnimem.store.postgres.locks` (scopes, unit rows, blobs, document
frequencies, graph and log, counters) and runs through :meth:`PostgresStore._write`,
which retries a transaction that lost a deadlock or serialisation race. An add
re-checks its content hashes under its scopes' locks, so the same content added by
two processes at once is stored once; the other is skipped, as a duplicate.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import replace
from datetime import datetime, timezone
from typing import Any, TypeVar

import numpy as np

from omnimem.errors import NotFoundError, OmnimemError, ReadOnlyStoreError, StoreError, WriteConflictError
from omnimem.mau import MAU, Links, Modality, Scope
from omnimem.store.audit import AuditEvent
from omnimem.results import AuditRecord
from omnimem.store.base import RowWriter, StoreMeta, Vector
from omnimem.store.cold import check_ref, content_ref
from omnimem.store.postgres import governance_sql as gov
from omnimem.store.tombstones import forgotten_since, past_owners
from omnimem.store.postgres.connect import describe, open_pool, parse_url, psycopg_modules
from omnimem.store.postgres.graph import PgGraphRows, delete_units_cascade
from omnimem.store.postgres.jobs import PgJobQueue, insert_jobs
from omnimem.store.postgres.keys import PgKeys
from omnimem.store.postgres import locks
from omnimem.store.postgres.admit import jobs_without, missing, new_content
from omnimem.store.jobs import NewJob
from omnimem.store.postgres.migrate import migrate
from omnimem.store.postgres.schema import INDEX, VECTOR_INDEX_MARK, build_vector_index, vector_index_ddl
from omnimem.store.postgres.terms import TermIndexer
from omnimem.store.postgres.unit_rows import COLUMNS, WRITTEN, to_row as _row, to_unit as _unit

log = logging.getLogger(__name__)
T = TypeVar("T")



def scope_sql(scope: Scope, *, exact: bool, prefix: str = "") -> tuple[str, list[Any]]:
    """SQL for a scope (the tenant first, for the index); ``exact`` also matches NULL columns."""
    parts: list[str] = []
    args: list[Any] = []
    if scope.user_id is not None or exact:
        parts.append(f"{prefix}tenant = %s")
        args.append(gov.tenant_of(scope))
    for col, value in scope.as_dict().items():
        if value is not None:
            parts.append(f"{prefix}{col} = %s")
            args.append(value)
        elif exact:
            parts.append(f"{prefix}{col} IS NULL")
    return (" AND ".join(parts) or "TRUE"), args


class PostgresStore(PgKeys, PgJobQueue):
    """Units, meta, audit log, tombstones, blobs and the graph in one PostgreSQL database."""

    def __init__(self, url: str, *, sparse_context: int = 1, read_only: bool = False, pool_size: int = 8,
                 language: str = "en") -> None:
        self.target = parse_url(url)
        self.path = None
        self.url = self.target.shown
        self.read_only = bool(read_only)
        self.last_write_seq = 0
        self.write_attempts = locks.ATTEMPTS  # tries of a transaction that loses deadlock or serialisation races
        self.terms = TermIndexer(sparse_context, language)
        self._psycopg, _ = psycopg_modules()
        self._migrate()
        self._pool = open_pool(self.target, max_size=pool_size, read_only=self.read_only)
        self._check_term_context()
        self._resume_vector_index()

    def _migrate(self) -> None:
        psycopg = self._psycopg
        try:
            conn = psycopg.connect(self.target.dsn, connect_timeout=10)
        except psycopg.Error as exc:
            raise StoreError(f"cannot connect to PostgreSQL at {self.target.shown}: {describe(exc)}; check the URL "
                             "(postgresql://user:pw@host:5432/db) and that the server is running") from None
        try:
            if self.read_only:
                from omnimem.store.postgres.migrate import current_version
                from omnimem.store.postgres.schema import SCHEMA_VERSION

                version = current_version(conn)
                if version == 0:
                    raise StoreError(f"database {self.target.shown} holds no omnimem store; a read-only open needs "
                                     "one: create it with a writable open or omnimem migrate --url ...")
                if version != SCHEMA_VERSION:
                    raise ReadOnlyStoreError(f"database {self.target.shown} needs a schema upgrade; run "
                                             f"omnimem migrate --url ... once")
            else:
                migrate(conn)
        finally:
            conn.close()

    def _check_term_context(self) -> None:
        """The BM25 postings were built with some ``sparse_context``; rebuild them if this store asks another."""
        stored = self._meta_value("sparse_context")
        if stored is None or self.read_only:
            return
        if int(stored) != self.terms.context:
            log.info("BM25 postings built with sparse_context=%s, rebuilding with %s", stored, self.terms.context)
            with self._tx("rebuilding the BM25 postings") as conn:
                locks.lock_everything(conn)
                self.terms.rebuild(conn)
                conn.execute("UPDATE meta SET value = %s WHERE key = 'sparse_context'", (str(self.terms.context),))
                self._bump(conn)

    def _resume_vector_index(self) -> bool:
        """Build the HNSW index a bulk load dropped and did not rebuild (its process died); True when it did.

        The load left the index's definition under ``vector_index`` in ``meta`` (see
        :mod:`omnimem.store.postgres.bulk`), so the index comes back with its graph parameters.
        """
        definition = None if self.read_only else self._meta_value(VECTOR_INDEX_MARK)
        if definition is None:
            return False
        log.warning("the HNSW index of %s was dropped by a bulk load that did not finish; building it now",
                    self.target.shown)
        with self._tx("building the vector index") as conn:
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (0x6F6D6E69,))
            if conn.execute("SELECT 1 FROM pg_indexes WHERE indexname = %s", (INDEX,)).fetchone() is None:
                build_vector_index(conn, definition=definition)
            conn.execute("DELETE FROM meta WHERE key = %s", (VECTOR_INDEX_MARK,))
        return True

    # -- connections and transactions -----------------------------------------
    @contextmanager
    def _read(self) -> Iterator[Any]:
        """A pooled connection for reads (autocommit: each statement sees what was committed when it ran)."""
        try:
            with self._pool.connection() as conn:
                yield conn
        except OmnimemError:
            raise
        except self._psycopg.errors.ReadOnlySqlTransaction:
            raise ReadOnlyStoreError("this store is open read-only; open it writable to change it") from None
        except self._psycopg.Error as exc:
            raise StoreError(f"PostgreSQL read failed at {self.target.shown}: {describe(exc)}") from None

    @contextmanager
    def _tx(self, what: str = "the write") -> Iterator[Any]:
        """One transaction: everything inside commits together or not at all (a lost connection included)."""
        if self.read_only:
            raise ReadOnlyStoreError("this store is open read-only; open it writable to change it")
        psycopg = self._psycopg
        try:
            with self._pool.connection() as conn, conn.transaction():
                yield conn
        except OmnimemError:
            raise
        except (psycopg.errors.DeadlockDetected, psycopg.errors.SerializationFailure) as exc:  # before Operational
            raise WriteConflictError(f"{what} lost a race with a concurrent writer ({describe(exc)}); nothing of "
                                     "it was stored") from None
        except psycopg.errors.InsufficientPrivilege as exc:
            raise StoreError(f"{what} was refused, nothing was stored: {describe(exc)}; a connection bound to one "
                             "user (omnimem_user=) can only write that user's memories") from None
        except psycopg.OperationalError as exc:
            raise StoreError(f"the connection to PostgreSQL was lost during {what}; nothing of it was stored "
                             f"(the transaction rolled back); retry when the server is reachable: {describe(exc)}"
                             ) from None
        except psycopg.Error as exc:
            raise StoreError(f"{what} failed, nothing was stored: {describe(exc)}") from None

    def _write(self, what: str, body: Callable[[Any], T]) -> T:
        """``body(conn)`` in one transaction (:meth:`_tx`), run again from the start when it lost a deadlock or
        serialisation race, up to ``write_attempts`` times with jittered exponential backoff."""
        cause = ""
        for attempt in range(self.write_attempts):
            try:
                with self._tx(what) as conn:
                    return body(conn)
            except WriteConflictError as exc:
                cause = str(exc)
                log.debug("retrying (%d): %s", attempt + 1, cause)
                if attempt + 1 < self.write_attempts:
                    time.sleep(locks.backoff(attempt))
        raise WriteConflictError(f"{what} was tried {self.write_attempts} time(s) and lost to concurrent writers "
                                 f"each time (last: {cause}); nothing of it was stored; the call can be repeated")

    def _bump(self, conn: Any, docs: int = 0, doc_len: int = 0) -> None:
        row = conn.execute("UPDATE counters SET seq = seq + 1, docs = docs + %s, doc_len = doc_len + %s "
                           "RETURNING seq", (docs, doc_len)).fetchone()
        self.last_write_seq = int(row[0])

    @contextmanager
    def graph_rows(self) -> Iterator[PgGraphRows]:
        with self._read() as conn:
            yield PgGraphRows(conn)

    # -- meta ------------------------------------------------------------------
    def _meta_value(self, key: str) -> str | None:
        with self._read() as conn:
            row = conn.execute("SELECT value FROM meta WHERE key = %s", (key,)).fetchone()
        return None if row is None else str(row[0])

    def meta(self) -> StoreMeta | None:
        with self._read() as conn:
            rows = dict(conn.execute("SELECT key, value FROM meta").fetchall())
        return StoreMeta.recorded(rows)

    def init_meta(self, embedder: str, dim: int, *, roles: str = "none", language: str = "en") -> StoreMeta:
        if self.read_only:
            raise ReadOnlyStoreError(f"database {self.target.shown} holds no memories yet (no embedder recorded); "
                                     "open it writable once to start the store")
        with self._tx("recording the embedder") as conn:
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (0x6F6D6E69,))
            if conn.execute("SELECT 1 FROM meta WHERE key = 'embedder'").fetchone() is None:
                for key, value in (("embedder", embedder), ("dim", str(dim)), ("embedder_roles", roles),
                                   ("language", language), ("sparse_context", str(self.terms.context))):
                    conn.execute("INSERT INTO meta(key, value) VALUES (%s, %s) ON CONFLICT DO NOTHING", (key, value))
                for step in vector_index_ddl(dim):
                    conn.execute(step)
        meta = self.meta()
        assert meta is not None
        return meta

    def seq(self) -> int:
        with self._read() as conn:
            return int(conn.execute("SELECT seq FROM counters").fetchone()[0])

    # -- writes ------------------------------------------------------------------
    def insert(self, units: Sequence[MAU], raw: Mapping[str, bytes], *, derived: Sequence[RowWriter] = (),
               event: AuditEvent | None = None, supersedes: Mapping[str, Sequence[str]] | None = None,
               jobs: Sequence[NewJob] = ()) -> list[tuple[int, MAU]]:
        """Store ``units`` in one transaction; a unit whose content is stored already is skipped, not returned.

        The content check runs under the scope locks of the units (content hashes include the exact scope),
        so of several processes adding the same content at once exactly one stores it; the caller reports
        the others as duplicates (:mod:`omnimem.engine.ingest.pipeline`). A unit is never a duplicate of the units
        it supersedes (an enriched version keeps its original's hash). Rows ``derived`` writes for a skipped
        unit are removed in the same transaction.
        """
        if not units and not raw and not jobs:
            return []
        for ref, data in raw.items():
            if content_ref(data) != check_ref(ref):
                raise StoreError(f"cold-tier content does not match its reference {ref}; nothing was stored")
        return self._write(f"writing {len(units)} unit(s)", lambda conn: self._insert(
            conn, units, raw, derived, event, dict(supersedes or {}), jobs))

    def _insert(self, conn: Any, units: Sequence[MAU], raw: Mapping[str, bytes], derived: Sequence[RowWriter],
                event: AuditEvent | None, supersedes: dict[str, Sequence[str]],
                jobs: Sequence[NewJob]) -> list[tuple[int, MAU]]:
        locks.lock_scopes(conn, {u.scope for u in units})  # 1: one writer per scope from here to the commit
        kept, skipped = new_content(conn, units, supersedes)
        if skipped:
            supersedes = {k: v for k, v in supersedes.items() if k not in skipped}
            jobs = jobs_without(jobs, skipped)
            unused = {u.raw_ref for u in units if u.id in skipped} - {u.raw_ref for u in kept}
            raw = {ref: data for ref, data in raw.items() if ref not in unused}
            if event is not None:
                event = replace(event, unit_ids=tuple(i for i in event.unit_ids if i not in skipped))
            if not kept and not raw and not jobs:
                return []
        olds = sorted({old for olds in supersedes.values() for old in olds})
        if olds:
            locks.lock_units(conn, olds)  # 2
        if raw:  # 3: DO UPDATE locks an existing blob row against a concurrent delete
            with conn.cursor() as cur:
                cur.executemany("INSERT INTO blobs(ref, data) VALUES (%s, %s) ON CONFLICT (ref) DO UPDATE "
                                "SET ref = excluded.ref", sorted(raw.items()))
        out: list[tuple[int, MAU]] = []
        rids = sorted(int(r[0]) for r in conn.execute(
            "SELECT nextval(pg_get_serial_sequence('units', 'rid')) FROM generate_series(1, %s)", (len(kept),)))
        batch = {u.id for u in kept}
        gone = missing(conn, [p for u in kept if (p := u.links.prev_id) and p not in skipped and p not in batch])
        last: dict[Scope, str | None] = {}
        for rid, unit in zip(rids, kept):
            prev = skipped.get(unit.links.prev_id or "", unit.links.prev_id)  # chained to a skipped unit: its holder
            if prev is None or prev in gone:  # a unit deleted before these locks were ours is no predecessor
                prev = self._last_in_session(conn, unit.scope, last)
            if unit.scope.session_id is not None:
                last[unit.scope] = unit.id
            out.append((rid, replace(unit, links=Links(prev, None, unit.source_ids))))
        tokens = self.terms.tokens(conn, out)  # BM25 terms, with the session's earlier lines
        if out:
            with conn.cursor() as cur:
                cur.executemany(
                    f"INSERT INTO units (tenant, doc_len, {COLUMNS}) VALUES ({', '.join(['%s'] * (2 + WRITTEN))})",
                    [(gov.tenant_of(u.scope), len(words), rid, *_row(u)) for (rid, u), words in zip(out, tokens)])
            self.terms.copy(conn, [(rid, u.scope) for rid, u in out], tokens)  # 4: term_df rows in term order
        for write in derived:  # 5: graph and CLIP rows commit or roll back with the units
            write(PgGraphRows(conn))
        if skipped:
            delete_units_cascade(conn, list(skipped))
            conn.execute("DELETE FROM clip_vectors WHERE unit_id = ANY(%s)", (list(skipped),))
        for new_id, old_ids in supersedes.items():
            gov.mark_superseded(conn, old_ids, new_id, kept[0].record_time)
        if event is not None and (out or not skipped):  # an add whose every unit was a duplicate logs nothing
            gov.log_event(conn, event)
        insert_jobs(conn, jobs)  # the units' enrichment, committed with them
        self._bump(conn, len(out), sum(len(words) for words in tokens))  # 6
        return out

    def _graph_rows(self, conn: Any) -> PgGraphRows:
        return PgGraphRows(conn)

    @staticmethod
    def _last_in_session(conn: Any, scope: Scope, cache: dict[Scope, str | None]) -> str | None:
        if scope.session_id is None:
            return None
        if scope not in cache:
            where, args = scope_sql(scope, exact=True)
            row = conn.execute(f"SELECT id FROM units WHERE {where} ORDER BY rid DESC LIMIT 1", args).fetchone()
            cache[scope] = row[0] if row else None
        return cache[scope]

    def supersede(self, pairs: Mapping[str, Sequence[str]], event: AuditEvent) -> None:
        now = datetime.now(timezone.utc)

        def body(conn: Any) -> None:
            locks.lock_units(conn, sorted({*pairs, *(old for olds in pairs.values() for old in olds)}))  # 2
            for new_id, old_ids in pairs.items():
                gov.mark_superseded(conn, old_ids, new_id, now)
            gov.log_event(conn, event)
            self._bump(conn)

        self._write("superseding", body)

    def set_trust(self, ids: Sequence[str], trust: str, event: AuditEvent) -> int:
        def body(conn: Any) -> int:
            locks.lock_units(conn, sorted(ids))
            changed = conn.execute("UPDATE units SET trust = %s WHERE id = ANY(%s) AND trust != %s",
                                   (trust, list(ids), trust)).rowcount
            gov.log_event(conn, event)
            self._bump(conn)
            return int(changed)

        return self._write("changing trust", body)

    def log(self, event: AuditEvent) -> None:
        self._write("logging an event", lambda conn: gov.log_event(conn, event))

    def delete(self, ids: Sequence[str], *, event: AuditEvent | None = None, tombstone: bool = True,
               forgotten: Scope | None = None) -> list[tuple[int, str]]:
        """Remove units, their postings, graph and CLIP rows and unreferenced blobs in one transaction."""
        if not ids and forgotten is None:
            return []
        return self._write(f"deleting {len(ids)} unit(s)",
                           lambda conn: self._delete(conn, list(ids), event, tombstone, forgotten))

    def _delete(self, conn: Any, ids: list[str], event: AuditEvent | None, tombstone: bool,
                forgotten: Scope | None) -> list[tuple[int, str]]:
        scopes = {Scope(*r) for r in conn.execute(
            "SELECT DISTINCT user_id, agent_id, session_id FROM units WHERE id = ANY(%s)", (ids,))}
        locks.lock_scopes(conn, scopes)  # 1: no add links to, or takes BM25 context from, a unit going now
        victims = [(int(r[0]), Scope(r[1], r[2], r[3])) for r in conn.execute(
            "SELECT rid, user_id, agent_id, session_id FROM units WHERE id = ANY(%s) ORDER BY rid", (ids,))]
        if late := {s for _, s in victims} - scopes:  # a unit committed between the two reads: its scope too
            locks.lock_scopes(conn, late)  # (out of order, so it may deadlock: then the whole delete is retried)
        plan = self.terms.reindex_plan(conn, victims)  # the followers whose search text held their words
        locks.lock_units(conn, ids, rids=[rid for rid, _ in plan.keys], linked=True)  # 2
        rows = conn.execute(
            "DELETE FROM units WHERE id = ANY(%s) RETURNING rid, id, prev_id, raw_ref, content_hash, user_id, "
            "agent_id, session_id, superseded_by, doc_len, tenant", (ids,)).fetchall()
        rows.sort()
        removed = [(int(r[0]), str(r[1])) for r in rows]
        successor: dict[str, str | None] = {}
        gone = [uid for _, uid in removed]
        for row in rows:
            uid, prev_id = str(row[1]), row[2]
            successor[uid] = row[8]  # superseded_by
            # keep the chain whole: the next unit now follows our predecessor (itself maybe deleted too)
            while prev_id in successor and prev_id is not None:
                prev_id = next((r[2] for r in rows if r[1] == prev_id), None)
            conn.execute("UPDATE units SET prev_id = %s WHERE prev_id = %s", (prev_id, uid))
        refs = sorted({r[3] for r in rows if r[3]})
        if refs:  # 3
            conn.execute("DELETE FROM blobs b WHERE ref = ANY(%s) AND NOT EXISTS "
                         "(SELECT 1 FROM units u WHERE u.raw_ref = b.ref)", (refs,))
        followers = 0
        if removed:  # 4: every term_df row these postings move, locked in term order before any changes
            rewritten = [rid for rid, _ in removed] + [rid for rid, _ in plan.keys]
            held = locks.lock_terms(conn, [*(r[0] for r in conn.execute(
                "SELECT DISTINCT term FROM terms WHERE rid = ANY(%s)", (rewritten,))),
                *(t for words in plan.tokens for t in words)])
            conn.execute("DELETE FROM terms WHERE rid = ANY(%s)", (rewritten,))
            followers = self.terms.apply(conn, plan)
            locks.drop_unused_terms(conn, held)
        for _rid, uid, _prev, _ref, chash, user_id, agent_id, session_id, *_rest in rows:  # 5
            if tombstone and forgotten is None:
                gov.bury(conn, uid, chash, Scope(user_id, agent_id, session_id))
        if forgotten is not None:
            gov.forget_scope(conn, forgotten)
        if event is not None and (removed or forgotten is not None):
            gov.log_event(conn, replace(event, unit_ids=tuple(gone)))
        if removed:
            delete_units_cascade(conn, gone)
            conn.execute("DELETE FROM clip_vectors WHERE unit_id = ANY(%s)", (gone,))
            gov.reconnect(conn, successor, event.actor if event else "omnimem")
            self._bump(conn, -len(removed), followers - sum(int(r[9]) for r in rows))  # 6
        return removed

    def replace_vectors(self, rids: Sequence[int], vectors: Sequence[Vector], embedder: str, dim: int,
                        event: AuditEvent, roles: str = "none") -> None:
        def body(conn: Any) -> None:
            locks.lock_everything(conn)  # 1: every row changes; no other writer runs meanwhile
            conn.execute("DROP INDEX IF EXISTS units_embedding_hnsw")
            conn.execute("ALTER TABLE units ALTER COLUMN embedding TYPE vector")
            with conn.cursor() as cur:
                cur.executemany("UPDATE units SET embedding = %s WHERE rid = %s",
                                [(np.asarray(v, dtype=np.float32), int(rid)) for rid, v in zip(rids, vectors,
                                                                                             strict=True)])
            for step in vector_index_ddl(dim):
                conn.execute(step)
            conn.execute("INSERT INTO meta(key, value) VALUES ('embedder', %s), ('embedder_roles', %s) "
                         "ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value", (embedder, roles))
            conn.execute("UPDATE meta SET value = %s WHERE key = 'dim'", (str(dim),))
            gov.log_event(conn, event)
            self._bump(conn)

        self._write("re-embedding", body)

    def add_stats(self, counts: Mapping[str, float]) -> None:
        if not counts:
            return
        def body(conn: Any) -> None:
            with conn.cursor() as cur:  # rows in name order: two writers never wait on each other in a cycle
                cur.executemany("INSERT INTO filter_stats(name, value) VALUES (%s, %s) ON CONFLICT (name) DO UPDATE "
                                "SET value = filter_stats.value + excluded.value",
                                [(k, float(v)) for k, v in sorted(counts.items())])

        self._write("counting filter statistics", body)

    # -- reads -------------------------------------------------------------------
    def _units(self, where: str, args: Sequence[Any]) -> list[tuple[int, MAU]]:
        with self._read() as conn:
            # binary results: a vector arrives as float32 bytes, not text to parse (10x faster for many units);
            # each unit's next link (the unit whose prev_id it is; the newest if several) in the same statement
            rows = conn.execute(f"SELECT {COLUMNS}, (SELECT n.id FROM units n WHERE n.tenant = u.tenant "
                                f"AND n.prev_id = u.id ORDER BY n.rid DESC LIMIT 1) FROM units u WHERE {where} "
                                "ORDER BY rid", args, binary=True).fetchall()
        return [(int(r[0]), _unit(r[:-1], r[-1])) for r in rows]

    def get(self, ids: Sequence[str]) -> list[MAU]:
        found = {u.id: u for _, u in self._units("id = ANY(%s)", (list(ids),))}
        return [found[i] for i in ids if i in found]

    def get_with_rids(self, ids: Sequence[str]) -> list[tuple[int, MAU]]:
        return self._units("id = ANY(%s)", (list(ids),))

    def get_rows(self, rids: Sequence[int]) -> dict[int, MAU]:
        return dict(self._units("rid = ANY(%s)", ([int(r) for r in rids],)))

    def find_hashes(self, hashes: Sequence[str]) -> dict[str, str]:
        with self._read() as conn:
            return {h: uid for h, uid in conn.execute(
                "SELECT content_hash, id FROM units WHERE content_hash = ANY(%s) ORDER BY rid", (list(hashes),))}

    def recent(self, scope: Scope, limit: int) -> list[tuple[str, str]]:
        where, args = scope_sql(scope, exact=True)
        with self._read() as conn:
            rows = conn.execute(f"SELECT id, summary FROM units WHERE {where} ORDER BY rid DESC LIMIT %s",
                                [*args, limit]).fetchall()
        return [(str(a), str(b)) for a, b in rows]

    def recent_lines(self, scope: Scope, limit: int) -> list[tuple[str | None, str]]:
        where, args = scope_sql(scope, exact=True)
        with self._read() as conn:
            rows = conn.execute(f"SELECT speaker, summary FROM units WHERE {where} AND modality = 'text' "
                                "ORDER BY rid DESC LIMIT %s", [*args, limit]).fetchall()
        return [(a, str(b)) for a, b in reversed(rows)]

    def recent_metadata(self, scope: Scope, modality: Modality, limit: int) -> list[tuple[str, dict[str, Any]]]:
        where, args = scope_sql(scope, exact=True)
        with self._read() as conn:
            rows = conn.execute(f"SELECT id, metadata FROM units WHERE {where} AND modality = %s "
                                "ORDER BY rid DESC LIMIT %s", [*args, modality.value, limit]).fetchall()
        return [(str(uid), json.loads(meta)) for uid, meta in rows]

    def ids_in_scope(self, scope: Scope) -> list[str]:
        where, args = scope_sql(scope, exact=False)
        with self._read() as conn:
            return [r[0] for r in conn.execute(f"SELECT id FROM units WHERE {where} ORDER BY rid", args)]

    def predecessors(self, ids: Sequence[str]) -> list[str]:
        with self._read() as conn:
            return [r[0] for r in conn.execute("SELECT id FROM units WHERE superseded_by = ANY(%s) ORDER BY rid",
                                               (list(ids),))]

    def events(self, *, unit_id: str | None = None, scope: Scope | None = None,
               limit: int | None = None) -> list[AuditRecord]:
        with self._read() as conn:
            return gov.read_events(conn, unit_id=unit_id, scope=scope, limit=limit)

    def tombstoned(self, items: Sequence[tuple[Scope, str]]) -> dict[str, str]:
        with self._read() as conn:
            return gov.find_tombstones(conn, items)

    def tombstone_owner(self, unit_id: str) -> Scope | None:
        with self._read() as conn:
            return gov.tombstone_owner(conn, unit_id)

    def past_owners(self, unit_ids: Sequence[str]) -> dict[str, set[tuple[str | None, str | None]]]:
        with self._read() as conn:
            return past_owners(conn, unit_ids, "%s")

    def forgotten_since(self, scope: Scope) -> datetime | None:
        with self._read() as conn:
            return forgotten_since(conn, scope)

    def embed_rows(self) -> Iterator[tuple[int, Scope, str | None, str, str, str | None]]:
        with self._read() as conn:
            rows = conn.execute("SELECT rid, user_id, agent_id, session_id, speaker, summary, modality, event_time "
                                "FROM units ORDER BY rid").fetchall()
        for rid, user, agent, session, speaker, summary, modality, when in rows:
            yield int(rid), Scope(user, agent, session), speaker, summary, modality, when

    def read_raw(self, ref: str) -> bytes:
        check_ref(ref)
        with self._read() as conn:
            row = conn.execute("SELECT data FROM blobs WHERE ref = %s", (ref,)).fetchone()
        if row is None:
            raise NotFoundError(f"cold-tier content {ref} is missing")
        return bytes(row[0])

    def filter_stats(self) -> dict[str, float]:
        with self._read() as conn:
            return {k: float(v) for k, v in conn.execute("SELECT name, value FROM filter_stats ORDER BY name")}

    def stats(self) -> dict[str, Any]:
        with self._read() as conn:
            units, users, sessions = conn.execute(
                "SELECT COUNT(*), COUNT(DISTINCT user_id), COUNT(DISTINCT session_id) FROM units").fetchone()
            by_modality = dict(conn.execute("SELECT modality, COUNT(*) FROM units GROUP BY modality ORDER BY 1"))
        return {"units": int(units), "by_modality": {k: int(v) for k, v in by_modality.items()},
                "users": int(users), "sessions": int(sessions)}

    def scrub(self) -> bool:
        """VACUUM the side tables that held deleted rows (postings, blobs, graph, tombstones).

        ``units`` is left to autovacuum: vacuuming it walks the whole HNSW
        index, too costly after every delete. Deleted rows are invisible to
        every query from the commit on; for their bytes on disk see
        docs/postgres.md (``VACUUM FULL``, WAL retention).
        """
        if self.read_only:
            return True
        return self.vacuum(("terms", "term_df", "blobs", "clip_vectors", "entities", "entity_aliases", "entity_units",
                            "relations", "relation_units", "tombstones_keyed", "scope_keys"),
                           after="a delete", then="reclaim the space")

    def vacuum(self, tables: Sequence[str], *, analyze: bool = False, after: str = "a write",
               then: str = "do it later") -> bool:
        """``VACUUM`` (with ``ANALYZE``) ``tables`` outside any transaction; False, logged, if it did not run.

        Nothing depends on it for correctness (every row is committed already), so a failure is a warning
        saying that autovacuum will ``then``.
        """
        command = "VACUUM (ANALYZE)" if analyze else "VACUUM"
        try:
            with self._pool.connection() as conn:  # pooled connections are in autocommit mode
                for table in tables:
                    conn.execute(f"{command} {table}")
        except self._psycopg.Error as exc:
            log.warning("%s after %s did not run (%s); autovacuum will %s", command, after, describe(exc), then)
            return False
        return True

    def close(self) -> None:
        self._pool.close()

