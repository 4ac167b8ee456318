"""The job-queue half of the ``UnitStore`` contract: enqueue with units, claim with a lease, complete,
fail with retry or dead letter, retry and drop. Every backend must pass these (PostgreSQL joins here)."""

from __future__ import annotations

from dataclasses import replace

import threading
import time

import pytest

from omnimem.errors import InvalidInputError, NotFoundError, StoreError
from omnimem.mau import Scope
from omnimem.store.jobs import NewJob
from omnimem.store.sqlite.store import SQLiteStore
from tests.store.conftest import Backend
from tests.store.test_unit_store import unit


def test_jobs_are_enqueued_with_their_units_and_a_key_is_queued_once(backend: Backend) -> None:
    store = backend.store
    store.insert([unit("a", Scope("u"))], {}, jobs=[NewJob("enrich", "enrich:a", {"unit": "a"})])
    store.enqueue([NewJob("enrich", "enrich:a", {"unit": "other"}), NewJob("graph", "graph:a", {"units": ["a"]})])
    assert store.queue_depth() == {"pending": 2, "running": 0, "failed": 0}
    assert store.queue_depth(["graph"]) == {"pending": 1, "running": 0, "failed": 0}
    first = store.jobs("pending")[0]
    assert (first.kind, first.key, first.payload, first.attempts) == ("enrich", "enrich:a", {"unit": "a"}, 0)


def test_a_failed_insert_enqueues_nothing(backend: Backend) -> None:
    store = backend.store
    store.insert([unit("a", Scope("u"))], {})
    with pytest.raises(StoreError):  # the same id with other content: the whole transaction rolls back
        store.insert([replace(unit("a", Scope("u")), content_hash="other")], {}, jobs=[NewJob("enrich", "enrich:again")])
    assert store.jobs() == []


def test_claim_leases_each_job_to_one_worker_oldest_first(backend: Backend) -> None:
    store = backend.store
    store.enqueue([NewJob("enrich", f"k{i}") for i in range(3)])
    mine = store.claim("w1", 60, limit=2)
    assert [j.key for j in mine] == ["k0", "k1"] and all(j.state == "running" and j.attempts == 1 for j in mine)
    assert all(j.worker == "w1" and j.lease_until and j.lease_until > time.time() + 50 for j in mine)
    assert [j.key for j in store.claim("w2", 60, limit=5)] == ["k2"]
    assert store.claim("w3", 60) == []
    assert store.claim("w3", 60, kinds=["graph"]) == []
    with pytest.raises(InvalidInputError):
        store.claim("w3", 0)


def test_concurrent_claims_never_share_a_job(backend: Backend) -> None:
    store = backend.store
    store.enqueue([NewJob("enrich", f"k{i}") for i in range(60)])
    got: dict[str, list[int]] = {}

    def work(name: str) -> None:
        got[name] = []
        while batch := store.claim(name, 60, limit=3):
            got[name].extend(j.id for j in batch)

    threads = [threading.Thread(target=work, args=(f"w{n}",)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    ids = [i for claimed in got.values() for i in claimed]
    assert len(ids) == 60 and len(set(ids)) == 60


def test_an_expired_lease_lets_another_worker_take_the_job(backend: Backend) -> None:
    store = backend.store
    store.enqueue([NewJob("enrich", "k")])
    first = store.claim("dead", 1.0)[0]  # long enough that a loaded machine still sees it leased next line
    assert store.claim("alive", 60) == []  # still leased
    time.sleep(1.1)
    again = store.claim("alive", 60)
    assert [j.id for j in again] == [first.id] and (again[0].attempts, again[0].expiries) == (1, 1)
    assert store.complete(first.id, "dead") is False  # the dead worker lost it: its late answer is refused
    assert store.fail(first.id, "dead", "late", retry_at=None) is False
    assert store.complete(first.id, "alive") is True and store.jobs() == []


def test_fail_schedules_a_retry_or_parks_the_job_with_its_error(backend: Backend) -> None:
    store = backend.store
    store.enqueue([NewJob("enrich", "k")])
    job = store.claim("w", 60)[0]
    assert store.fail(job.id, "w", "LLMUnavailableError: 503", retry_at=time.time() + 3600)
    pending = store.jobs("pending")[0]
    assert pending.last_error == "LLMUnavailableError: 503" and pending.run_after > time.time() + 3000
    assert store.claim("w", 60) == []  # not before run_after
    store.retry([pending.id])  # only failed jobs are retried
    assert store.claim("w", 60) == []
    store.fail(job.id, "w", "x", retry_at=None)  # the worker no longer holds it: nothing happens
    assert store.queue_depth()["pending"] == 1


def test_dead_letter_retry_and_drop(backend: Backend) -> None:
    store = backend.store
    store.enqueue([NewJob("enrich", "a"), NewJob("enrich", "b"), NewJob("enrich", "c")])
    for job in store.claim("w", 60, limit=3):
        assert store.fail(job.id, "w", f"boom {job.key}", retry_at=None)
    failed = store.jobs("failed")
    assert [(j.key, j.last_error) for j in failed] == [("a", "boom a"), ("b", "boom b"), ("c", "boom c")]
    assert store.retry([failed[0].id]) == 1 and store.drop([failed[1].id]) == 1
    assert store.drop([failed[0].id]) == 0  # pending again, not failed: drop leaves it
    back = store.claim("w", 60)
    assert [j.key for j in back] == ["a"] and back[0].attempts == 1  # attempts start over
    assert store.retry() == 1 and store.queue_depth() == {"pending": 1, "running": 1, "failed": 0}


def test_complete_writes_derived_rows_only_for_current_units(backend: Backend) -> None:
    store = backend.store
    store.insert([unit("a", Scope("u")), unit("b", Scope("u"))], {})
    store.enqueue([NewJob("graph", "g")])
    job = store.claim("w", 60)[0]
    written: list[str] = []
    store.delete(["b"])
    with pytest.raises(NotFoundError):
        store.complete(job.id, "w", derived=[lambda rows: written.append("x")], requires=["a", "b"])
    assert written == [] and store.queue_depth()["running"] == 1  # rolled back: still held
    assert store.complete(job.id, "w", derived=[lambda rows: written.append("x")], requires=["a"])
    assert written == ["x"] and store.jobs() == []


def test_the_queue_survives_a_reopen(tmp_path) -> None:
    store = SQLiteStore(tmp_path / "s")
    store.init_meta("fake", 4)
    store.enqueue([NewJob("enrich", "k", {"unit": "u1"})])
    store.claim("crashed", 0.01)
    store.close()
    time.sleep(0.02)
    again = SQLiteStore(tmp_path / "s")
    job = again.claim("next", 60)[0]
    assert (job.key, job.payload, job.attempts, job.expiries) == ("k", {"unit": "u1"}, 1, 1)
    again.close()
