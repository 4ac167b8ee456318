"""Lease expiries are not failures: a worker that keeps dying while it holds a job (a crash-looping
process) does not use up the job's attempts, so the job runs once a worker survives; only a job
abandoned more than ``MAX_EXPIRIES`` times is parked (it may be what kills its workers)."""

from __future__ import annotations

import time
from pathlib import Path

from omnimem import Memory
from omnimem.engine.enrich.worker import MAX_EXPIRIES
from omnimem.llm.fake import FakeLLM
from omnimem.store.jobs import NewJob
from tests.llm.test_enrich_async import LONG, model


def _queued_and_abandoned(path: Path, times: int) -> str:
    """A stored long text with its summary job, claimed ``times`` times by workers that died holding it."""
    with Memory(path, embedder="fake", enrich="off") as mem:
        unit_id = mem.add(LONG, user_id="u").id
        mem.store.enqueue([NewJob("enrich", f"enrich:{unit_id}", {"unit": unit_id, "tasks": ["summary"]})])
        for _ in range(times):
            assert len(mem.store.claim("crashed", 0.01)) == 1
            time.sleep(0.03)
        job = mem.store.jobs()[0]
        assert (job.attempts, job.expiries) == (1, times - 1)  # one try; the rest were take-overs
    return unit_id


def test_a_crash_looping_worker_does_not_park_the_job_as_failed(tmp_path: Path) -> None:
    unit_id = _queued_and_abandoned(tmp_path / "mem", 7)
    with Memory(tmp_path / "mem", embedder="fake", llm=FakeLLM(model), enrich_attempts=2) as mem:
        assert mem.flush(timeout=30)
        assert mem.stats()["queue"] == {"pending": 0, "running": 0, "failed": 0}
        assert mem.get(unit_id).superseded_by is not None  # the enriched version replaced it


def test_a_job_abandoned_again_and_again_is_parked_with_the_reason(tmp_path: Path) -> None:
    _queued_and_abandoned(tmp_path / "mem", MAX_EXPIRIES + 1)  # the next claim is take-over MAX_EXPIRIES + 1
    with Memory(tmp_path / "mem", embedder="fake", llm=FakeLLM(model)) as mem:
        assert mem.flush(timeout=30)
        failed = mem.store.jobs("failed")
        assert len(failed) == 1 and f"abandoned {MAX_EXPIRIES + 1} times (lease expired)" in str(failed[0].last_error)
