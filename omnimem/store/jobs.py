"""The durable job queue held in the store: enrichment waits here for a worker.

A job is a row in the ``jobs`` table, enqueued in the transaction of the
units it enriches (``UnitStore.insert(jobs=)``), so a unit is never stored
without its job nor a job without its unit. Workers (a thread in the process,
or ``omnimem worker`` in another) *claim* jobs with a lease:

- ``pending``: waits for a worker; runnable once ``run_after`` has passed.
- ``running``: claimed by ``worker`` until ``lease_until``. A worker that
  dies (SIGKILL, power loss) simply stops renewing; once the lease has
  expired the job is claimable again, so nothing is lost.
- ``failed``: the dead letter. It failed ``attempts`` times; ``last_error``
  says why. It stays until ``retry`` puts it back or ``drop`` removes it.

A job that completes is deleted (its result is in the units it wrote).
Claiming is one transaction (SQLite: ``BEGIN IMMEDIATE``; PostgreSQL:
``SELECT ... FOR UPDATE SKIP LOCKED``), so two workers never hold one job.
Handlers must be idempotent: a job whose worker died after writing its
result but before ``complete`` runs again (see :mod:`omnimem.enrich`).

This module holds the value types and the SQLite statements; the
:class:`SQLiteJobQueue` mixin gives :class:`~omnimem.store.sqlite.SQLiteStore`
the contract's methods.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from omnimem.errors import InvalidInputError, NotFoundError
from omnimem.store.graph_sql import SQLiteGraphRows
from omnimem.store.unit_rows import chunks

if TYPE_CHECKING:  # base.py names these types in the contract
    from omnimem.store.base import RowWriter

JobState = Literal["pending", "running", "failed"]
STATES: tuple[JobState, ...] = ("pending", "running", "failed")

SCHEMA = [
    """CREATE TABLE IF NOT EXISTS jobs (
        id INTEGER PRIMARY KEY,
        kind TEXT NOT NULL,
        key TEXT NOT NULL UNIQUE,
        payload TEXT NOT NULL,
        state TEXT NOT NULL DEFAULT 'pending',
        attempts INTEGER NOT NULL DEFAULT 0,
        run_after REAL NOT NULL,
        lease_until REAL,
        worker TEXT,
        last_error TEXT,
        created REAL NOT NULL,
        updated REAL NOT NULL
    )""",
    "CREATE INDEX IF NOT EXISTS jobs_ready ON jobs(state, run_after)",
]


@dataclass(frozen=True, slots=True)
class NewJob:
    """A job to enqueue. ``key`` makes it idempotent: a second job with the same key is not added."""

    kind: str
    key: str
    payload: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Job:
    """A queued job as stored (see the module docstring for the states)."""

    id: int
    kind: str
    key: str
    payload: dict[str, Any]
    state: JobState
    attempts: int  # claims so far, this one included while running
    run_after: float  # epoch seconds: not claimed before
    lease_until: float | None
    worker: str | None
    last_error: str | None
    created: float
    updated: float

    def to_dict(self) -> dict[str, Any]:
        return {f: getattr(self, f) for f in self.__dataclass_fields__}


_COLUMNS = "id, kind, key, payload, state, attempts, run_after, lease_until, worker, last_error, created, updated"


def _job(row: Sequence[Any]) -> Job:
    return Job(int(row[0]), str(row[1]), str(row[2]), json.loads(row[3]), row[4], int(row[5]), float(row[6]),
               row[7], row[8], row[9], float(row[10]), float(row[11]))


def insert_jobs(conn: sqlite3.Connection, jobs: Sequence[NewJob], now: float | None = None) -> None:
    """Add jobs inside the caller's transaction; a key already queued is left as it is."""
    now = time.time() if now is None else now
    conn.executemany(
        "INSERT OR IGNORE INTO jobs(kind, key, payload, state, attempts, run_after, created, updated) "
        "VALUES (?, ?, ?, 'pending', 0, ?, ?, ?)",
        [(j.kind, j.key, json.dumps(j.payload, sort_keys=True), now, now, now) for j in jobs],
    )


class SQLiteJobQueue:
    """The job-queue half of the ``UnitStore`` contract, on the store's SQLite connection."""

    _conn: sqlite3.Connection
    _lock: threading.RLock
    read_only: bool

    def _tx(self) -> Any: ...  # the store's write transaction (BEGIN IMMEDIATE)

    def enqueue(self, jobs: Sequence[NewJob]) -> None:
        """Add jobs on their own (units enqueue theirs in ``insert(jobs=)``); existing keys are kept."""
        if jobs:
            with self._lock, self._tx() as conn:
                insert_jobs(conn, jobs, time.time())

    def claim(self, worker: str, lease_s: float, limit: int = 1, kinds: Sequence[str] | None = None) -> list[Job]:
        """Take up to ``limit`` runnable jobs for ``worker``, oldest first, leased for ``lease_s`` seconds.

        Runnable: pending with ``run_after`` passed, or running with an
        expired lease (its worker died). Each claim adds one to ``attempts``.
        Atomic: two workers never hold the same job at once.
        """
        if lease_s <= 0 or limit < 1:
            raise InvalidInputError("claim needs lease_s > 0 and limit >= 1")
        now = time.time()
        kind_sql, kind_args = "", []
        if kinds is not None:
            kind_sql = f" AND kind IN ({','.join('?' * len(kinds))})"
            kind_args = list(kinds)
        with self._lock, self._tx() as conn:
            ids = [r[0] for r in conn.execute(
                "SELECT id FROM jobs WHERE ((state = 'pending' AND run_after <= ?) OR "
                f"(state = 'running' AND lease_until < ?)){kind_sql} ORDER BY id LIMIT ?",
                [now, now, *kind_args, limit])]
            if not ids:
                return []
            marks = ",".join("?" * len(ids))
            conn.execute(f"UPDATE jobs SET state = 'running', worker = ?, lease_until = ?, attempts = attempts + 1, "
                         f"updated = ? WHERE id IN ({marks})", [worker, now + lease_s, now, *ids])
            rows = conn.execute(f"SELECT {_COLUMNS} FROM jobs WHERE id IN ({marks}) ORDER BY id", ids).fetchall()
        return [_job(r) for r in rows]

    def complete(self, job_id: int, worker: str, *, derived: Sequence[RowWriter] = (),
                 requires: Sequence[str] = ()) -> bool:
        """Finish a job this worker holds: it leaves the queue, and ``derived`` rows are written in the
        same transaction (so a graph row and its job's completion commit together). Every unit in
        ``requires`` must still be there and current, else NotFoundError and nothing changes (the job
        fails this attempt and runs again). False, and nothing written, if the worker no longer holds
        the job (its lease expired and another worker took it)."""
        with self._lock, self._tx() as conn:
            held = conn.execute("SELECT 1 FROM jobs WHERE id = ? AND worker = ? AND state = 'running'",
                                (job_id, worker)).fetchone()
            if held is None:
                return False
            wanted = list(dict.fromkeys(requires))
            present = conn.execute(
                f"SELECT COUNT(*) FROM units WHERE superseded_by IS NULL AND id IN ({','.join('?' * len(wanted))})",
                wanted).fetchone()[0] if wanted else 0
            if present != len(wanted):  # rolled back: the job runs again on what is current then
                raise NotFoundError("units this job enriches were deleted or replaced while it ran")
            for write in derived:
                write(SQLiteGraphRows(conn))
            conn.execute("DELETE FROM jobs WHERE id = ?", (job_id,))
        return True

    def fail(self, job_id: int, worker: str, error: str, *, retry_at: float | None) -> bool:
        """Record a failed attempt: pending again at ``retry_at`` (epoch seconds), or, with ``None``, parked
        as ``failed`` (the dead letter) with ``error``. False if the worker no longer holds the job."""
        state = "failed" if retry_at is None else "pending"
        now = time.time()
        with self._lock, self._tx() as conn:
            cur = conn.execute(
                "UPDATE jobs SET state = ?, run_after = ?, lease_until = NULL, last_error = ?, updated = ? "
                "WHERE id = ? AND worker = ? AND state = 'running'",
                (state, now if retry_at is None else retry_at, error[:2000], now, job_id, worker))
        return bool(cur.rowcount == 1)

    def jobs(self, state: JobState | None = None, limit: int | None = None) -> list[Job]:
        """Queued jobs (all, or those in ``state``), oldest first."""
        where, args = ("WHERE state = ?", [state]) if state is not None else ("", [])
        with self._lock:
            rows = self._conn.execute(f"SELECT {_COLUMNS} FROM jobs {where} ORDER BY id LIMIT ?",
                                      [*args, -1 if limit is None else limit]).fetchall()
        return [_job(r) for r in rows]

    def retry(self, ids: Sequence[int] | None = None) -> int:
        """Put failed jobs (these, or all with ``None``) back in the queue, runnable now, attempts reset."""
        return self._change_failed(ids, "UPDATE jobs SET state = 'pending', attempts = 0, run_after = ?, "
                                        "worker = NULL, updated = ? WHERE state = 'failed'", True)

    def drop(self, ids: Sequence[int]) -> int:
        """Remove failed jobs for good (their units stay as they were stored)."""
        return self._change_failed(ids, "DELETE FROM jobs WHERE state = 'failed'", False)

    def _change_failed(self, ids: Sequence[int] | None, sql: str, stamped: bool) -> int:
        now = time.time()
        stamp = [now, now] if stamped else []
        changed = 0
        with self._lock, self._tx() as conn:
            if ids is None:
                return int(conn.execute(sql, stamp).rowcount)
            for chunk in chunks([int(i) for i in ids], 500):
                marks = ",".join("?" * len(chunk))
                changed += conn.execute(f"{sql} AND id IN ({marks})", [*stamp, *chunk]).rowcount
        return changed

    def queue_depth(self, kinds: Sequence[str] | None = None) -> dict[str, int]:
        """How many jobs (of these kinds, or all) are in each state (every state present, zero included)."""
        where, args = ("", []) if kinds is None else (f"WHERE kind IN ({','.join('?' * len(kinds))})", list(kinds))
        with self._lock:
            found = dict(self._conn.execute(f"SELECT state, COUNT(*) FROM jobs {where} GROUP BY state",
                                            args).fetchall())
        return {state: int(found.get(state, 0)) for state in STATES}
