"""The durable job queue held in the store: enrichment waits here for a worker.

A job is a row in the ``jobs`` table, enqueued in the transaction of the
units it enriches (``UnitStore.insert(jobs=)``), so a unit is never stored
without its job nor a job without its unit. Workers (a thread in the process,
or ``omnimem worker`` in another) *claim* jobs with a lease:

- ``pending``: waits for a worker; runnable once ``run_after`` has passed.
- ``running``: claimed by ``worker`` until ``lease_until``. A worker that
  dies (SIGKILL, power loss) simply stops renewing; once the lease has
  expired the job is claimable again, so nothing is lost. Taking a job over
  from an expired lease counts in ``expiries``, not ``attempts``: a crash-
  looping worker is not the job failing (see :mod:`omnimem.engine.enrich.worker`).
- ``failed``: the dead letter. It failed ``attempts`` times; ``last_error``
  says why. It stays until ``retry`` puts it back or ``drop`` removes it.

A job that completes is deleted (its result is in the units it wrote).
Claiming is one transaction (SQLite: ``BEGIN IMMEDIATE``; PostgreSQL:
``SELECT ... FOR UPDATE SKIP LOCKED``), so two workers never hold one job.
Handlers must be idempotent: a job whose worker died after writing its
result but before ``complete`` runs again (see :mod:`omnimem.engine.enrich`).

This module holds the value types, the schema and the insert used inside a
unit transaction; :mod:`omnimem.store.sqlite.jobs` gives
:class:`~omnimem.store.sqlite.store.SQLiteStore` the contract's methods.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

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
    attempts: int  # tries so far, this one included while running (a take-over after an expired lease is none)
    run_after: float  # epoch seconds: not claimed before
    lease_until: float | None
    worker: str | None
    last_error: str | None
    created: float
    updated: float
    expiries: int = 0  # times its lease expired and another claim took it over (its worker died)

    def to_dict(self) -> dict[str, Any]:
        return {f: getattr(self, f) for f in self.__dataclass_fields__}


COLUMNS = ("id, kind, key, payload, state, attempts, run_after, lease_until, worker, last_error, created, updated, "
           "expiries")
# What a claim sets: a take-over after an expired lease (the row is still 'running') is an expiry, not a try.
CLAIM_COUNTS = ("attempts = CASE WHEN state = 'running' THEN attempts ELSE attempts + 1 END, "
                "expiries = CASE WHEN state = 'running' THEN expiries + 1 ELSE expiries END")
ADD_EXPIRIES = "ALTER TABLE jobs ADD COLUMN expiries INTEGER NOT NULL DEFAULT 0"


def to_job(row: Sequence[Any]) -> Job:
    return Job(int(row[0]), str(row[1]), str(row[2]), json.loads(row[3]), row[4], int(row[5]), float(row[6]),
               row[7], row[8], row[9], float(row[10]), float(row[11]), int(row[12]))


def insert_jobs(conn: sqlite3.Connection, jobs: Sequence[NewJob], now: float | None = None) -> None:
    """Add jobs inside the caller's transaction; a key already queued is left as it is."""
    now = time.time() if now is None else now
    conn.executemany(
        "INSERT OR IGNORE INTO jobs(kind, key, payload, state, attempts, run_after, created, updated) "
        "VALUES (?, ?, ?, 'pending', 0, ?, ?, ?)",
        [(j.kind, j.key, json.dumps(j.payload, sort_keys=True), now, now, now) for j in jobs],
    )
