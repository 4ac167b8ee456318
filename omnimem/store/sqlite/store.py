"""The embedded store: SQLite hot tier (WAL) and a content-addressed cold tier.

``SQLiteStore(None)`` keeps everything in memory; that is what ``Memory()``
uses. SQLite is the source of truth: search indexes are derived from it and
rebuilt when they disagree with its change counter.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from omnimem.store.sqlite.graph import SQLiteGraphRows, delete_units_cascade
from omnimem.errors import NotAStoreError, ReadOnlyStoreError, SchemaVersionError, StoreError
from omnimem.mau import MAU, Links, Modality, Scope
from omnimem.store.audit import AuditEvent, log_event
from omnimem.store import tombstones, versions
from omnimem.store.base import RowWriter, StoreMeta
from omnimem.store.cold import ColdStore, FileColdStore, MemoryColdStore
from omnimem.store.jobs import NewJob, insert_jobs
from omnimem.store.sqlite.jobs import SQLiteJobQueue
from omnimem.store.sqlite.opening import DB_NAME, check_store_file, check_writable, connect
from omnimem.store.sqlite.admit import admit, drop_derived
from omnimem.store.sqlite.audit_log import SQLiteAuditLog
from omnimem.store.sqlite.schema import MIGRATIONS, SCHEMA_VERSION
from omnimem.store.sqlite.keys import SQLiteKeys
from omnimem.store.sqlite.unit_rows import COLUMNS as _COLUMNS, chunks as _chunks, scope_clause as _scope_clause
from omnimem.store.sqlite.unit_rows import PLACES as _PLACES, to_row as _row, to_unit as _unit
from omnimem.store.sqlite.unit_rows import trust_clause

log = logging.getLogger(__name__)


class SQLiteStore(SQLiteKeys, SQLiteJobQueue, SQLiteAuditLog):
    """Hot tier in ``omnimem.db``, cold tier in ``cold/``, one folder per store."""

    def __init__(self, path: Path | None, *, busy_timeout_ms: int = 30_000, read_only: bool = False) -> None:
        self.path = path
        self.read_only = read_only and path is not None
        self._busy_ms = int(busy_timeout_ms)
        self._lock = threading.RLock()
        self.last_write_seq = 0
        self.cold: ColdStore
        if path is None:
            self._conn = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
            self.cold = MemoryColdStore()
        else:
            self._check_folder(path)
            check_store_file(path / DB_NAME)  # another program's SQLite file is refused before it is opened
            if not self.read_only:
                check_writable(path)
            try:
                self._conn = connect(path / DB_NAME, busy_timeout_ms, read_only=self.read_only)
                if not self.read_only:
                    self._conn.execute("PRAGMA journal_mode=WAL")
                    self._conn.execute("PRAGMA synchronous=NORMAL")
            except sqlite3.DatabaseError as exc:
                raise NotAStoreError(f"{path} does not hold a readable omnimem store: {exc}") from exc
            self.cold = FileColdStore(path / "cold")
        self._conn.execute("PRAGMA secure_delete=ON")
        self._migrate()

    def check_writable(self) -> None:
        if self.read_only:
            raise ReadOnlyStoreError(f"store {self.path} is open read-only; open it writable to change it")

    @staticmethod
    def _check_folder(path: Path) -> None:
        if path.exists() and not path.is_dir():
            raise NotAStoreError(f"{path} is a file, not a store folder")
        if path.is_dir() and any(path.iterdir()) and not (path / DB_NAME).exists():
            raise NotAStoreError(f"{path} is not empty and holds no omnimem store ({DB_NAME} missing)")

    def _migrate(self) -> None:
        """Bring the schema up to date, each migration in its own transaction.

        The version is read inside the write transaction, so two processes
        opening a new store at once never run the same migration twice. A
        read-only store is only checked: it must be up to date.
        """
        if self.read_only:
            if self._current_version() != SCHEMA_VERSION:
                raise ReadOnlyStoreError(f"store {self.path} needs a schema upgrade; open it writable once")
            return
        with self._lock:
            for number, _name, sql in MIGRATIONS:
                try:
                    self._conn.execute("BEGIN IMMEDIATE")
                except sqlite3.DatabaseError as exc:
                    raise NotAStoreError(f"{self.path} does not hold a readable omnimem store: {exc}") from exc
                try:
                    version = self._current_version()
                    if number > version:
                        for step in sql:
                            step(self._conn) if callable(step) else self._conn.execute(step)
                        self._conn.execute(
                            "INSERT OR REPLACE INTO meta(key, value) VALUES ('schema_version', ?)", (str(number),)
                        )
                    self._conn.execute("COMMIT")
                except BaseException:
                    self._conn.execute("ROLLBACK")
                    raise
            self._finish_pending()

    def _current_version(self) -> int:
        try:
            tables = {r[0] for r in self._conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        except sqlite3.DatabaseError as exc:
            raise NotAStoreError(f"{self.path} does not hold a readable omnimem store: {exc}") from exc
        if tables and "meta" not in tables:
            raise NotAStoreError(f"{self.path} holds a SQLite file that is not an omnimem store")
        version = self._schema_version() if tables else 0
        if version > SCHEMA_VERSION:
            raise SchemaVersionError(
                f"store schema {version} is newer than this omnimem ({SCHEMA_VERSION}); upgrade omnimem"
            )
        return version

    def _schema_version(self) -> int:
        row = self._conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
        return int(row[0]) if row else 0

    # -- meta ---------------------------------------------------------------
    def meta(self) -> StoreMeta | None:
        with self._lock:
            rows = dict(self._conn.execute("SELECT key, value FROM meta").fetchall())
        return StoreMeta.recorded(rows)

    def init_meta(self, embedder: str, dim: int, *, roles: str = "none", language: str = "en") -> StoreMeta:
        with self._lock, self._tx():
            for key, value in (("embedder", embedder), ("dim", str(dim)), ("embedder_roles", roles),
                               ("language", language)):
                self._conn.execute("INSERT OR IGNORE INTO meta(key, value) VALUES (?, ?)", (key, value))
        meta = self.meta()
        assert meta is not None
        return meta

    def seq(self) -> int:
        with self._lock:
            row = self._conn.execute("SELECT value FROM meta WHERE key='seq'").fetchone()
        return int(row[0]) if row else 0

    # -- writes -------------------------------------------------------------
    class _Tx:
        def __init__(self, conn: sqlite3.Connection, read_only: bool) -> None:
            self.conn = conn
            self.read_only = read_only

        def __enter__(self) -> sqlite3.Connection:
            if self.read_only:
                raise ReadOnlyStoreError("this store is open read-only; open it writable to change it")
            self.conn.execute("BEGIN IMMEDIATE")
            return self.conn

        def __exit__(self, exc_type: object, *_: object) -> None:
            self.conn.execute("ROLLBACK" if exc_type else "COMMIT")

    def _tx(self) -> SQLiteStore._Tx:
        return SQLiteStore._Tx(self._conn, self.read_only)

    def _bump(self) -> None:
        """Advance the change counter inside the caller's transaction.

        ``last_write_seq`` tells the writer which counter value its own write
        produced, so it can tell its changes from other processes' changes.
        """
        self._conn.execute(
            "INSERT INTO meta(key, value) VALUES ('seq', '1') "
            "ON CONFLICT(key) DO UPDATE SET value = CAST(value AS INTEGER) + 1"
        )
        row = self._conn.execute("SELECT value FROM meta WHERE key='seq'").fetchone()
        self.last_write_seq = int(row[0])

    @contextmanager
    def graph_rows(self) -> Iterator[SQLiteGraphRows]:
        """The graph's rows, read under the store's lock."""
        with self._lock:
            yield SQLiteGraphRows(self._conn)

    def insert(
        self,
        units: Sequence[MAU],
        raw: Mapping[str, bytes],
        *,
        derived: Sequence[RowWriter] = (),
        event: AuditEvent | None = None,
        supersedes: Mapping[str, Sequence[str]] | None = None,
        jobs: Sequence[NewJob] = (),
    ) -> list[tuple[int, MAU]]:
        """Store ``units`` in one transaction; a unit whose content another process stored first is skipped, not
        returned (checked inside the transaction: :mod:`omnimem.store.sqlite.admit`)."""
        out: list[tuple[int, MAU]] = []
        journal = None
        with self._lock:
            try:
                with self._tx() as conn:
                    kept, skipped, raw, event, supersedes, jobs = admit(conn, units, raw, event, supersedes or {}, jobs)
                    if skipped and not kept and not jobs:  # another process stored all of it: nothing to write
                        return []
                    # cold files first (an orphan file is swept, a dangling ref would be lost content), written
                    # under the write lock so a sweep in another process never takes a file still being committed
                    journal = self.cold.put_journaled(raw)
                    last: dict[Scope, str | None] = {}
                    # row ids assigned here (inside the write lock of BEGIN IMMEDIATE) so one
                    # executemany inserts the whole batch
                    next_rid = self._next_rid(conn, len(kept))
                    for offset, unit in enumerate(kept):
                        # chained to a skipped unit: to the unit that holds its content
                        prev = (skipped.get(unit.links.prev_id or "", unit.links.prev_id)
                                or self._last_in_session(unit.scope, last))
                        linked = replace(unit, links=Links(prev, None, unit.source_ids))
                        if unit.scope.session_id is not None:
                            last[unit.scope] = unit.id
                        out.append((next_rid + offset, linked))
                    conn.executemany(
                        f"INSERT INTO units ({_COLUMNS}) VALUES ({_PLACES})",
                        [(rid, *_row(unit)) for rid, unit in out],
                    )
                    for write in derived:  # graph and CLIP rows commit or roll back with the units
                        write(SQLiteGraphRows(conn))
                    if skipped:
                        drop_derived(conn, list(skipped))
                    for new_id, old_ids in (supersedes or {}).items():
                        versions.mark_superseded(conn, old_ids, new_id, units[0].record_time)
                    if event is not None and (out or not skipped):  # an add whose every unit was a duplicate
                        log_event(conn, event)  # logs nothing
                    insert_jobs(conn, jobs)  # the units' enrichment, committed with them
                    self._bump()
            except sqlite3.Error as exc:
                raise StoreError(f"writing {len(units)} unit(s) failed, nothing was stored: {exc}") from exc
            except OSError as exc:
                raise StoreError(f"writing the cold tier failed, nothing was stored: {exc}") from exc
            self.cold.journal_done(journal)
        return out

    @staticmethod
    def _next_rid(conn: sqlite3.Connection, count: int) -> int:
        """Row ids only ever grow (never reused after a delete), so an index
        entry can never come to mean another unit, even in another process."""
        top = int(conn.execute("SELECT COALESCE(MAX(rid), 0) FROM units").fetchone()[0])
        row = conn.execute("SELECT value FROM meta WHERE key = 'rid_high'").fetchone()
        first = max(top, int(row[0]) if row else 0) + 1
        conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('rid_high', ?)", (str(first + count - 1),))
        return first

    def _last_in_session(self, scope: Scope, cache: dict[Scope, str | None]) -> str | None:
        if scope.session_id is None:
            return None
        if scope in cache:
            return cache[scope]
        where, args = _scope_clause(scope, exact=True)
        row = self._conn.execute(f"SELECT id FROM units WHERE {where} ORDER BY rid DESC LIMIT 1", args).fetchone()
        return row[0] if row else None

    def supersede(self, pairs: Mapping[str, Sequence[str]], event: AuditEvent) -> None:
        """Mark units as replaced by others (kept for history), with the event, atomically."""
        now = datetime.now(timezone.utc)
        with self._lock, self._tx() as conn:
            for new_id, old_ids in pairs.items():
                versions.mark_superseded(conn, old_ids, new_id, now)
            log_event(conn, event)
            self._bump()

    def predecessors(self, ids: Sequence[str]) -> list[str]:
        """Ids of the units that ``ids`` directly superseded."""
        out: list[str] = []
        with self._lock:
            for chunk in _chunks(list(ids), 500):
                marks = ",".join("?" * len(chunk))
                rows = self._conn.execute(f"SELECT id FROM units WHERE superseded_by IN ({marks})", chunk)
                out.extend(r[0] for r in rows)
        return out

    def delete(
        self, ids: Sequence[str], *, event: AuditEvent | None = None, tombstone: bool = True,
        forgotten: Scope | None = None,
    ) -> list[tuple[int, str]]:
        """Remove units; their predecessors become current again (logged against them).

        ``forgotten`` names a user and/or agent forgotten as a whole: instead of
        tombstones its keys and tombstones are destroyed (see ``tombstones``),
        also when it has no units left.
        """
        if not ids and forgotten is None:
            return []
        with self._lock:
            with self._tx() as conn:
                removed: list[tuple[int, str]] = []
                successor: dict[str, str | None] = {}
                refs: set[str] = set()
                for chunk in _chunks(list(ids), 500):
                    marks = ",".join("?" * len(chunk))
                    rows = conn.execute(
                        "SELECT rid, id, prev_id, raw_ref, content_hash, user_id, agent_id, session_id, superseded_by "
                        f"FROM units WHERE id IN ({marks})", chunk
                    ).fetchall()
                    for rid, uid, prev_id, raw_ref, chash, user_id, agent_id, session_id, superseded_by in rows:
                        # keep the chain whole: the next unit now follows our predecessor
                        conn.execute("UPDATE units SET prev_id = ? WHERE prev_id = ?", (prev_id, uid))
                        conn.execute("DELETE FROM units WHERE rid = ?", (rid,))
                        removed.append((int(rid), str(uid)))
                        successor[uid] = superseded_by
                        if raw_ref:
                            refs.add(raw_ref)
                        if tombstone and forgotten is None:
                            tombstones.bury(conn, uid, chash, Scope(user_id, agent_id, session_id))
                if forgotten is not None:
                    tombstones.forget_scope(conn, forgotten)
                for ref in refs:  # recorded in the same transaction: a crash cannot strand the file
                    conn.execute("INSERT OR IGNORE INTO pending_cold(ref) VALUES (?)", (ref,))
                if event is not None and (removed or forgotten is not None):
                    log_event(conn, replace(event, unit_ids=tuple(uid for _, uid in removed)))
                if removed:
                    gone = [uid for _, uid in removed]
                    delete_units_cascade(conn, gone)
                    for chunk in _chunks(gone, 500):
                        conn.execute(f"DELETE FROM clip_vectors WHERE unit_id IN ({','.join('?' * len(chunk))})", chunk)
                    versions.reconnect(conn, successor, event.actor if event else "omnimem")
                    self._bump()
            self._finish_pending()
        return removed

    def _finish_pending(self) -> None:
        """Unlink cold files whose last unit is gone, or that a crashed write left without a unit.

        Runs after the migrations (``_migrate``), so the table always exists;
        under the write lock, which every cold-tier write holds too, so a file
        is never unlinked while another process commits a unit that uses it.
        """
        if self.read_only:
            return
        journals = self.cold.interrupted()
        if journals or self._conn.execute("SELECT 1 FROM pending_cold LIMIT 1").fetchone():
            with self._tx() as conn:
                refs = [r for (r,) in conn.execute("SELECT ref FROM pending_cold")]
                for ref in refs + [r for _, names in journals for r in names]:
                    if conn.execute("SELECT 1 FROM units WHERE raw_ref = ? LIMIT 1", (ref,)).fetchone() is None:
                        self.cold.delete(ref)
                conn.execute("DELETE FROM pending_cold")
                for name, _ in journals:
                    self.cold.journal_done(name)
        if self._conn.execute("SELECT value FROM meta WHERE key = 'scrub_pending'").fetchone():
            self.scrub()

    # -- reads --------------------------------------------------------------
    def _units(self, where: str, args: Sequence[Any]) -> list[tuple[int, MAU]]:
        with self._lock:
            rows = self._conn.execute(f"SELECT {_COLUMNS} FROM units WHERE {where}", args).fetchall()
            ids = [r[1] for r in rows]
            nexts: dict[str, str] = {}
            for chunk in _chunks(ids, 500):
                marks = ",".join("?" * len(chunk))
                for prev_id, uid in self._conn.execute(
                    f"SELECT prev_id, id FROM units WHERE prev_id IN ({marks})", chunk
                ):
                    nexts[prev_id] = uid
        return [(int(r[0]), _unit(r, nexts.get(r[1]))) for r in rows]

    def get(self, ids: Sequence[str]) -> list[MAU]:
        found: dict[str, MAU] = {}
        for chunk in _chunks(list(ids), 500):
            for _, unit in self._units(f"id IN ({','.join('?' * len(chunk))})", chunk):
                found[unit.id] = unit
        return [found[i] for i in ids if i in found]

    def get_with_rids(self, ids: Sequence[str]) -> list[tuple[int, MAU]]:
        """Units by id with their row ids (what index filters speak)."""
        out: list[tuple[int, MAU]] = []
        for chunk in _chunks(list(ids), 500):
            out.extend(self._units(f"id IN ({','.join('?' * len(chunk))})", chunk))
        return out

    def get_rows(self, rids: Sequence[int]) -> dict[int, MAU]:
        out: dict[int, MAU] = {}
        for chunk in _chunks(list(rids), 500):
            out.update(self._units(f"rid IN ({','.join('?' * len(chunk))})", chunk))
        return out

    def find_hashes(self, hashes: Sequence[str]) -> dict[str, str]:
        out: dict[str, str] = {}
        with self._lock:
            for chunk in _chunks(list(hashes), 500):
                marks = ",".join("?" * len(chunk))
                for h, uid in self._conn.execute(
                    f"SELECT content_hash, id FROM units WHERE content_hash IN ({marks})", chunk
                ):
                    out[h] = uid
        return out

    def recent(self, scope: Scope, limit: int) -> list[tuple[str, str]]:
        where, args = _scope_clause(scope, exact=True)
        with self._lock:
            rows = self._conn.execute(
                f"SELECT id, summary FROM units WHERE {where} ORDER BY rid DESC LIMIT ?", [*args, limit]
            ).fetchall()
        return [(str(a), str(b)) for a, b in rows]

    def recent_lines(self, scope: Scope, limit: int) -> list[tuple[str | None, str]]:
        """(speaker, summary) of the newest text units in exactly this scope, oldest first."""
        where, args = _scope_clause(scope, exact=True)
        with self._lock:
            rows = self._conn.execute(f"SELECT speaker, summary FROM units WHERE {where} AND modality = 'text' "
                                      "ORDER BY rid DESC LIMIT ?", [*args, limit]).fetchall()
        return [(a, str(b)) for a, b in reversed(rows)]

    def lines_before(self, scope: Scope, rid: int, limit: int) -> list[tuple[str | None, str]]:
        """(speaker, summary) of the last ``limit`` text units in exactly this scope before row ``rid``, oldest first."""
        where, args = _scope_clause(scope, exact=True)
        with self._lock:
            rows = self._conn.execute(f"SELECT speaker, summary FROM units WHERE {where} AND modality = 'text' "
                                      "AND rid < ? ORDER BY rid DESC LIMIT ?", [*args, rid, limit]).fetchall()
        return [(a, str(b)) for a, b in reversed(rows)]

    def all_rids(self) -> npt.NDArray[np.int64]:
        """Every unit's row id, ascending (what the indexes must hold)."""
        with self._lock:
            rows = self._conn.execute("SELECT rid FROM units ORDER BY rid").fetchall()
        return np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))

    def embed_rows(self) -> Iterator[tuple[int, Scope, str | None, str, str, str | None]]:
        """(row id, scope, speaker, summary, modality, event time) of every unit in insertion order."""
        with self._lock:
            rows = self._conn.execute("SELECT rid, user_id, agent_id, session_id, speaker, summary, modality, "
                                      "event_time FROM units ORDER BY rid").fetchall()
        for rid, user, agent, session, speaker, summary, modality, when in rows:
            yield int(rid), Scope(user, agent, session), speaker, summary, modality, when

    def recent_metadata(self, scope: Scope, modality: Modality, limit: int) -> list[tuple[str, dict[str, Any]]]:
        """Newest units of one modality in exactly this scope, with their metadata."""
        where, args = _scope_clause(scope, exact=True)
        with self._lock:
            rows = self._conn.execute(
                f"SELECT id, metadata FROM units WHERE {where} AND modality = ? ORDER BY rid DESC LIMIT ?",
                [*args, modality.value, limit],
            ).fetchall()
        return [(str(uid), json.loads(meta)) for uid, meta in rows]

    def rids_in_scope(
        self, scope: Scope, *, include_superseded: bool = False, as_of: datetime | None = None,
        min_trust: str | None = None,
    ) -> npt.NDArray[np.int64] | None:
        """Row ids a search may return; ``None`` when every unit may be returned.

        By default superseded units are withheld. ``as_of`` gives the units the
        memory held at that time: recorded by then and not yet superseded; ``min_trust`` those that trusted.
        """
        where, args = _scope_clause(scope, exact=False)
        trusted, levels = trust_clause(min_trust)
        where, args = f"{where} AND {trusted}", [*args, *levels]
        if as_of is not None:
            where += " AND record_ts <= ?"
            args.append(as_of.timestamp())
            if not include_superseded:
                where += " AND (superseded_ts IS NULL OR superseded_ts > ?)"
                args.append(as_of.timestamp())
        elif not include_superseded:
            where += " AND superseded_by IS NULL"
        with self._lock:
            if scope.is_empty() and as_of is None and min_trust is None:
                if include_superseded:
                    return None
                if self._conn.execute("SELECT 1 FROM units WHERE superseded_by IS NOT NULL LIMIT 1").fetchone() is None:
                    return None
            rows = self._conn.execute(f"SELECT rid FROM units WHERE {where}", args).fetchall()
        return np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))

    def ids_in_scope(self, scope: Scope) -> list[str]:
        where, args = _scope_clause(scope, exact=False)
        with self._lock:
            return [r[0] for r in self._conn.execute(f"SELECT id FROM units WHERE {where} ORDER BY rid", args)]

    def vectors(self, batch: int = 10_000) -> Iterator[tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]]:
        last = 0
        while True:
            with self._lock:
                rows = self._conn.execute(
                    "SELECT rid, embedding FROM units WHERE rid > ? ORDER BY rid LIMIT ?", (last, batch)
                ).fetchall()
            if not rows:
                return
            ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
            vecs = np.vstack([np.frombuffer(r[1], dtype=np.float32) for r in rows])
            last = int(ids[-1])
            yield ids, vecs

    def index_rows(self) -> Iterator[tuple[int, str | None, str]]:
        with self._lock:
            rows = self._conn.execute("SELECT rid, speaker, summary FROM units ORDER BY rid").fetchall()
        for rid, speaker, summary in rows:
            yield int(rid), speaker, summary

    def add_stats(self, counts: Mapping[str, float]) -> None:
        """Add to the running counters of what the filters kept and dropped."""
        if not counts:
            return
        with self._lock, self._tx() as conn:
            for name, value in counts.items():
                conn.execute(
                    "INSERT INTO filter_stats(name, value) VALUES (?, ?) "
                    "ON CONFLICT(name) DO UPDATE SET value = value + excluded.value",
                    (name, float(value)),
                )

    def filter_stats(self) -> dict[str, float]:
        with self._lock:
            return {k: v for k, v in self._conn.execute("SELECT name, value FROM filter_stats ORDER BY name")}

    def read_raw(self, ref: str) -> bytes:
        return self.cold.get(ref)

    def stats(self) -> dict[str, Any]:
        with self._lock:
            units = self._conn.execute("SELECT COUNT(*) FROM units").fetchone()[0]
            by_modality = dict(self._conn.execute("SELECT modality, COUNT(*) FROM units GROUP BY modality"))
            users = self._conn.execute("SELECT COUNT(DISTINCT user_id) FROM units").fetchone()[0]
            sessions = self._conn.execute("SELECT COUNT(DISTINCT session_id) FROM units").fetchone()[0]
        return {"units": units, "by_modality": by_modality, "users": users, "sessions": sessions}

    def replace_vectors(
        self, rids: Sequence[int], vectors: Sequence[Any], embedder: str, dim: int, event: AuditEvent,
        roles: str = "none",
    ) -> None:
        """Swap every unit's embedding and the recorded embedder in one transaction."""
        with self._lock, self._tx() as conn:
            conn.executemany(
                "UPDATE units SET embedding = ? WHERE rid = ?",
                [(np.asarray(v, dtype=np.float32).tobytes(), rid) for rid, v in zip(rids, vectors, strict=True)],
            )
            conn.execute("UPDATE meta SET value = ? WHERE key = 'embedder'", (embedder,))
            conn.execute("UPDATE meta SET value = ? WHERE key = 'dim'", (str(dim),))
            conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('embedder_roles', ?)", (roles,))
            log_event(conn, event)
            self._bump()

    def clip_vectors(self, model: str) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32] | None]:
        """Row ids and CLIP vectors of the image units embedded by ``model``."""
        with self._lock:
            rows = self._conn.execute(
                "SELECT u.rid, c.vector FROM clip_vectors c JOIN units u ON u.id = c.unit_id WHERE c.model = ? "
                "ORDER BY u.rid", (model,)).fetchall()
        if not rows:
            return np.zeros(0, dtype=np.int64), None
        return (np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows)),
                np.vstack([np.frombuffer(r[1], dtype=np.float32) for r in rows]))

    def scrub(self) -> bool:
        """Make deleted bytes unreadable: secure_delete zeroed the pages; move them out of the WAL.

        While another process reads, the WAL cannot be truncated; the scrub is
        then marked pending and finished at the next open, delete or close.
        Returns whether it completed. Never fails a delete that committed.
        """
        if self.path is None or self.read_only:
            return True
        with self._lock:
            self._conn.execute("PRAGMA busy_timeout=1000")
            try:
                busy = self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
            except sqlite3.OperationalError:
                busy = 1
            finally:
                self._conn.execute(f"PRAGMA busy_timeout={self._busy_ms}")
            try:
                if busy:
                    self._conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('scrub_pending', '1')")
                else:
                    self._conn.execute("DELETE FROM meta WHERE key = 'scrub_pending'")
            except sqlite3.OperationalError:
                return False
        if busy:
            log.warning("another process holds the store's WAL: deleted bytes leave it at the next checkpoint")
        return not busy

    def close(self) -> None:
        with self._lock:
            try:
                if self.path is not None:
                    self._finish_pending()
                    self.scrub()
            except (sqlite3.Error, OSError, StoreError) as exc:  # another process finishes the work later
                log.info("close: pending cold-tier deletes or WAL checkpoint left for later (%s)", exc)
            finally:
                self._conn.close()
