"""The job queue of :class:`~omnimem.store.sqlite.store.SQLiteStore` (see :mod:`omnimem.store.jobs`).

Claims run in ``BEGIN IMMEDIATE``: SQLite's one writer at a time is the
lock that keeps two workers, in any process, from taking the same job.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from omnimem.errors import InvalidInputError, NotFoundError
from omnimem.store.base import RowWriter
from omnimem.store.sqlite.graph import SQLiteGraphRows
from omnimem.store.jobs import CLAIM_COUNTS, COLUMNS as _COLUMNS, STATES, Job, JobState, NewJob, insert_jobs
from omnimem.store.jobs import to_job as _job
from omnimem.store.sqlite.unit_rows import chunks


class SQLiteJobQueue:
    """The job-queue half of the ``UnitStore`` contract, on the store's SQLite connection."""

    _conn: sqlite3.Connection
    _lock: threading.RLock
    read_only: bool

    if TYPE_CHECKING:  # provided by SQLiteStore
        def _tx(self) -> Any: ...  # the store's write transaction (BEGIN IMMEDIATE)

    def enqueue(self, jobs: Sequence[NewJob]) -> None:
        """Add jobs on their own (units enqueue theirs in ``insert(jobs=)``); existing keys are kept."""
        if jobs:
            with self._lock, self._tx() as conn:
                insert_jobs(conn, jobs, time.time())

    def claim(self, worker: str, lease_s: float, limit: int = 1, kinds: Sequence[str] | None = None) -> list[Job]:
        """Take up to ``limit`` runnable jobs for ``worker``, oldest first, leased for ``lease_s`` seconds.

        Runnable: pending with ``run_after`` passed, or running with an
        expired lease (its worker died). A claim adds one to ``attempts``, a take-over from an
        expired lease one to ``expiries`` instead.
        Atomic: two workers never hold the same job at once.
        """
        if lease_s <= 0 or limit < 1:
            raise InvalidInputError("claim needs lease_s > 0 and limit >= 1")
        now = time.time()
        kind_sql, kind_args = "", []
        if kinds is not None:
            kind_sql = f" AND kind IN ({','.join('?' * len(kinds))})"
            kind_args = list(kinds)
        runnable = ("SELECT id FROM jobs WHERE ((state = 'pending' AND run_after <= ?) OR "
                    f"(state = 'running' AND lease_until < ?)){kind_sql} ORDER BY id LIMIT ?")
        with self._lock:  # an idle worker looks without taking the write lock
            if not self._conn.execute(runnable, [now, now, *kind_args, 1]).fetchone():
                return []
        with self._lock, self._tx() as conn:
            ids = [r[0] for r in conn.execute(runnable, [now, now, *kind_args, limit])]
            if not ids:
                return []
            marks = ",".join("?" * len(ids))
            conn.execute(f"UPDATE jobs SET {CLAIM_COUNTS}, state = 'running', worker = ?, lease_until = ?, "
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
        return self._change_failed(ids, "UPDATE jobs SET state = 'pending', attempts = 0, expiries = 0, run_after = ?, "
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
