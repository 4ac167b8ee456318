"""The job queue of :class:`~omnimem.store.postgres.store.PostgresStore` (see :mod:`omnimem.store.jobs`).

Claims take runnable rows with ``SELECT ... FOR UPDATE SKIP LOCKED``: any
number of workers, in any process on any machine, claim concurrently without
waiting on each other and never hold the same job. Completion writes its
derived graph rows and removes the job in one transaction, holding the rows of
the units it enriches (a delete of them waits, or the job sees them gone). Each
transaction is retried when it loses a deadlock (``PostgresStore._write``).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, TypeVar

from omnimem.errors import InvalidInputError, NotFoundError
from omnimem.store.base import RowWriter
from omnimem.store.jobs import CLAIM_COUNTS, COLUMNS, STATES, Job, JobState, NewJob, to_job
from omnimem.store.postgres import locks

T = TypeVar("T")

SCHEMA = [
    """CREATE TABLE IF NOT EXISTS jobs (
        id BIGSERIAL PRIMARY KEY, kind TEXT NOT NULL, key TEXT NOT NULL UNIQUE, payload TEXT NOT NULL,
        state TEXT NOT NULL DEFAULT 'pending', attempts INTEGER NOT NULL DEFAULT 0,
        run_after DOUBLE PRECISION NOT NULL, lease_until DOUBLE PRECISION, worker TEXT, last_error TEXT,
        created DOUBLE PRECISION NOT NULL, updated DOUBLE PRECISION NOT NULL)""",
    "CREATE INDEX IF NOT EXISTS jobs_ready ON jobs (state, run_after, id)",
]


def insert_jobs(conn: Any, jobs: Sequence[NewJob], now: float | None = None) -> None:
    """Add jobs inside the caller's transaction; a key already queued is left as it is."""
    if not jobs:
        return
    now = time.time() if now is None else now
    with conn.cursor() as cur:
        cur.executemany(
            "INSERT INTO jobs(kind, key, payload, state, attempts, run_after, created, updated) "
            "VALUES (%s, %s, %s, 'pending', 0, %s, %s, %s) ON CONFLICT (key) DO NOTHING",
            [(j.kind, j.key, json.dumps(j.payload, sort_keys=True), now, now, now) for j in jobs])


class PgJobQueue:
    """The job-queue half of the ``UnitStore`` contract on PostgreSQL."""

    if TYPE_CHECKING:  # provided by the store class this mixin is part of
        def _tx(self, what: str = "the write") -> AbstractContextManager[Any]: ...
        def _write(self, what: str, body: Callable[[Any], T]) -> T: ...
        def _read(self) -> AbstractContextManager[Any]: ...
        def _graph_rows(self, conn: Any) -> Any: ...

    def enqueue(self, jobs: Sequence[NewJob]) -> None:
        if jobs:
            self._write("queueing jobs", lambda conn: insert_jobs(conn, jobs))

    def claim(self, worker: str, lease_s: float, limit: int = 1, kinds: Sequence[str] | None = None) -> list[Job]:
        if lease_s <= 0 or limit < 1:
            raise InvalidInputError("claim needs lease_s > 0 and limit >= 1")
        now = time.time()
        kind_sql, args = ("", []) if kinds is None else (" AND kind = ANY(%s)", [list(kinds)])
        runnable = ("SELECT id FROM jobs WHERE ((state = 'pending' AND run_after <= %s) OR "
                    f"(state = 'running' AND lease_until < %s)){kind_sql} ORDER BY id LIMIT %s")
        with self._read() as conn:  # an idle worker only looks
            if conn.execute(runnable, [now, now, *args, 1]).fetchone() is None:
                return []
        def body(conn: Any) -> list[Any]:
            ids = [int(r[0]) for r in conn.execute(runnable + " FOR UPDATE SKIP LOCKED", [now, now, *args, limit])]
            if not ids:
                return []
            return list(conn.execute(
                f"UPDATE jobs SET {CLAIM_COUNTS}, state = 'running', worker = %s, lease_until = %s, "
                f"updated = %s WHERE id = ANY(%s) RETURNING {COLUMNS}", (worker, now + lease_s, now, ids)).fetchall())

        return sorted((to_job(r) for r in self._write("claiming jobs", body)), key=lambda j: j.id)

    def complete(self, job_id: int, worker: str, *, derived: Sequence[RowWriter] = (),
                 requires: Sequence[str] = ()) -> bool:
        def body(conn: Any) -> bool:
            wanted = list(dict.fromkeys(requires))
            if wanted:  # locked first (the lock order): a delete of them waits for this, or this job sees them gone
                locks.lock_units(conn, wanted)
            held = conn.execute("SELECT 1 FROM jobs WHERE id = %s AND worker = %s AND state = 'running' FOR UPDATE",
                                (job_id, worker)).fetchone()
            if held is None:
                return False
            if wanted:
                present = conn.execute("SELECT COUNT(*) FROM units WHERE superseded_by IS NULL AND id = ANY(%s)",
                                       (wanted,)).fetchone()[0]
                if present != len(wanted):  # rolled back: the job runs again on what is current then
                    raise NotFoundError("units this job enriches were deleted or replaced while it ran")
            for write in derived:
                write(self._graph_rows(conn))
            conn.execute("DELETE FROM jobs WHERE id = %s", (job_id,))
            return True

        return self._write("completing a job", body)

    def fail(self, job_id: int, worker: str, error: str, *, retry_at: float | None) -> bool:
        state = "failed" if retry_at is None else "pending"
        now = time.time()
        return self._write("recording a failed job", lambda conn: bool(conn.execute(
            "UPDATE jobs SET state = %s, run_after = %s, lease_until = NULL, last_error = %s, updated = %s "
            "WHERE id = %s AND worker = %s AND state = 'running'",
            (state, now if retry_at is None else retry_at, error[:2000], now, job_id, worker)).rowcount == 1))

    def jobs(self, state: JobState | None = None, limit: int | None = None) -> list[Job]:
        where, args = ("WHERE state = %s", [state]) if state is not None else ("", [])
        with self._read() as conn:
            rows = conn.execute(f"SELECT {COLUMNS} FROM jobs {where} ORDER BY id LIMIT %s",
                                [*args, limit]).fetchall()
        return [to_job(r) for r in rows]

    def retry(self, ids: Sequence[int] | None = None) -> int:
        now = time.time()
        sql = ("UPDATE jobs SET state = 'pending', attempts = 0, expiries = 0, run_after = %s, worker = NULL, "
               "updated = %s "
               "WHERE state = 'failed'")
        if ids is None:
            return self._write("retrying jobs", lambda conn: int(conn.execute(sql, (now, now)).rowcount))
        return self._write("retrying jobs", lambda conn: int(
            conn.execute(sql + " AND id = ANY(%s)", (now, now, [int(i) for i in ids])).rowcount))

    def drop(self, ids: Sequence[int]) -> int:
        return self._write("dropping jobs", lambda conn: int(conn.execute(
            "DELETE FROM jobs WHERE state = 'failed' AND id = ANY(%s)", ([int(i) for i in ids],)).rowcount))

    def queue_depth(self, kinds: Sequence[str] | None = None) -> dict[str, int]:
        where, args = ("", []) if kinds is None else ("WHERE kind = ANY(%s)", [list(kinds)])
        with self._read() as conn:
            found = {r[0]: int(r[1]) for r in conn.execute(
                f"SELECT state, COUNT(*) FROM jobs {where} GROUP BY state", args)}
        return {state: found.get(state, 0) for state in STATES}
