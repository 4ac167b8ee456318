"""Workers that drain the job queue: threads of an engine, or the loop of ``omnimem worker``.

A worker claims one job at a time with a lease (``enrich_lease`` seconds), runs it
(:mod:`omnimem.engine.enrich.jobs`), and completes it, or records the failure: retried
after ``enrich_backoff * 2**(attempts-1)`` seconds (at most an hour), parked as
``failed`` with its error after ``enrich_attempts`` attempts. A job found with an
expired lease (its worker died) is claimed again; that take-over counts as an
expiry, not an attempt, so a crash-looping worker does not use up the job's
attempts and park it as failed. Only a job abandoned more than
``MAX_EXPIRIES`` times is parked (a job that kills its worker cannot loop forever).
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid

from omnimem import otel
from omnimem.engine.deps import Deps
from omnimem.engine.enrich import jobs as handlers
from omnimem.engine.ingest.plan import ENRICH, GRAPH, RESTATE
from omnimem.engine.ingest.pipeline import Ingestor
from omnimem.engine.writer import Writer
from omnimem.store.jobs import Job

log = logging.getLogger(__name__)

MAX_BACKOFF = 3600.0
MAX_EXPIRIES = 10  # take-overs after an expired lease before a job is parked (it may be what kills its worker)
IDLE_POLL = 0.5  # seconds between looks at the queue when nothing woke the worker (jobs of other processes)


def backoff(attempts: int, base: float) -> float:
    """Seconds before the next try after ``attempts`` failed ones: base, 2 base, 4 base, ... (at most an hour)."""
    return float(min(base * 2.0 ** max(attempts - 1, 0), MAX_BACKOFF))


def worker_name(label: str = "thread") -> str:
    """Who holds a lease: host, process and a random part (shown by ``omnimem queue``)."""
    return f"{socket.gethostname()}:{os.getpid()}:{label}:{uuid.uuid4().hex[:6]}"


class Enricher:
    """Claims and runs jobs for one engine. ``start()`` runs ``enrich_workers`` threads; ``run_once()``
    and ``run_forever()`` are for a foreground worker (``omnimem worker``) and tests."""

    def __init__(self, deps: Deps, writer: Writer) -> None:
        self.deps = deps
        self.writer = writer  # every job's writes, and the queue's claims and completions, go through it
        self.ingestor = Ingestor(deps, writer.state)  # its own ingestor: the caller's adds keep their media chain
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._start_lock = threading.Lock()

    def kinds(self) -> list[str]:
        """The job kinds this engine can run: graph jobs need the graph, the others an LLM. Jobs of other
        kinds wait in the queue for a worker that can (they are not failed for want of a model)."""
        return [*([GRAPH] if self.deps.graph is not None else []), *([ENRICH, RESTATE] if self.deps.llm else [])]

    # -- threads in the engine ---------------------------------------------------
    def start(self) -> None:
        """Start the worker threads (once; none if this engine can run no kind of job); they run until
        :meth:`stop`."""
        with self._start_lock:
            if self._threads or self._stop.is_set() or not self.kinds():
                return
            for n in range(self.deps.settings.enrich_workers):
                thread = threading.Thread(target=self.run_forever, name=f"omnimem-enrich-{n}", daemon=True)
                self._threads.append(thread)
                thread.start()

    def wake(self) -> None:
        """Jobs were enqueued: start the threads if needed and have an idle one look now."""
        if not self._threads and not self._stop.is_set():
            self.start()
        self._wake.set()

    def stop(self, timeout: float | None = None) -> None:
        """Stop the threads after the job each is running (never abandon a job half-way in-process)."""
        self._stop.set()
        self._wake.set()
        for thread in self._threads:
            thread.join(timeout)

    # -- the loop -----------------------------------------------------------------
    def run_forever(self, stop: threading.Event | None = None) -> None:
        """Claim and run jobs until stopped; idle, look again when woken or every ``IDLE_POLL`` seconds."""
        stop = stop or self._stop
        name = worker_name(threading.current_thread().name)
        while not stop.is_set() and not self._stop.is_set():
            try:
                ran = self.run_once(name)
            except Exception:  # the store went away (closed); the lease brings the job back
                if self.writer.state.closed:
                    return
                log.exception("enrichment worker %s: claiming failed; retrying", name)
                ran = 0
            if not ran:
                self._wake.wait(IDLE_POLL)
                self._wake.clear()

    def run_once(self, name: str | None = None, limit: int = 1) -> int:
        """Claim up to ``limit`` jobs and run them; how many were claimed."""
        name = name or worker_name("once")
        settings = self.deps.settings
        kinds = self.kinds()
        if not kinds:
            return 0
        claimed = self.writer.claim(name, settings.enrich_lease, limit, kinds)
        for job in claimed:
            self._run(name, job)
        return len(claimed)

    @otel.traced("omnimem.engine.enrich", otel.describe_job)  # one span per job
    def _run(self, name: str, job: Job) -> None:
        settings = self.deps.settings
        if job.expiries > MAX_EXPIRIES:  # abandoned by dying workers again and again
            self.writer.fail(job.id, name, f"{job.last_error or 'its worker stopped'}; abandoned {job.expiries} "
                             "times (lease expired)", retry_at=None)
            return
        try:
            outcome = handlers.run(self.deps, self.writer, self.ingestor, job)
            if not self.writer.complete(job.id, name, outcome.derived, outcome.requires):
                log.warning("job %s finished after its lease passed to another worker", job.key)
        except Exception as exc:  # any failure of the job is recorded on it, never lost
            if self.writer.state.closed:
                return
            otel.mark_failed(exc)
            error = f"{type(exc).__name__}: {exc}"
            last = job.attempts >= settings.enrich_attempts
            retry_at = None if last else time.time() + backoff(job.attempts, settings.enrich_backoff)
            log.warning("job %s attempt %d failed: %s", job.key, job.attempts, error)
            self.writer.fail(job.id, name, error, retry_at)

    # -- waiting for the queue --------------------------------------------------------
    def flush(self, timeout: float | None = None) -> bool:
        """Wait until no job is pending or running (failed ones do not count); False on timeout.

        With ``enrich="async"`` only the kinds this engine runs are waited for (a store opened without
        the graph does not wait for graph jobs forever); otherwise every kind (``omnimem worker``).
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        kinds = self.kinds() if self.deps.settings.enrich == "async" else None
        delay = 0.005
        while True:
            with self.writer.state.reading():
                depth = self.deps.store.queue_depth(kinds)
            if depth["pending"] + depth["running"] == 0:
                self.writer.sync()
                return True
            if deadline is not None and time.monotonic() >= deadline:
                return False
            time.sleep(delay if deadline is None else max(0.0, min(delay, deadline - time.monotonic())))
            delay = min(delay * 2, 0.05)
