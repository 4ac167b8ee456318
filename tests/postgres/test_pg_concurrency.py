"""Several writer processes on one PostgreSQL database: no duplicates, no surfaced deadlocks, no residue.

Each test starts a few OS processes (forkserver: fresh processes, not forks of pytest) that meet at a barrier and then write at once through
``Memory``; every error a worker sees is sent back and fails the test. Afterwards :func:`residue` reads
the database itself: postings, document frequencies, ``prev_id`` links and counters must be exactly what
the surviving units imply (the postings are compared with a rebuild from scratch, in a transaction that
is rolled back), so a survivor keeping a deleted unit's words is caught whatever the word.
"""

from __future__ import annotations

import logging
import multiprocessing as mp
import os
import queue
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import psycopg
import pytest

from omnimem import Memory
from omnimem.errors import WriteConflictError
from omnimem.mau import Scope
from omnimem.store.postgres import locks
from omnimem.store.postgres.store import PostgresStore
from omnimem.store.postgres.terms import TermIndexer
from tests.store.test_unit_store import unit

SPAWN = mp.get_context("forkserver")  # fresh processes, forked from one server that imported omnimem once
SPAWN.set_forkserver_preload(["omnimem.memory", "omnimem.store.postgres.store", "omnimem.engine.local",
                              "tests.postgres.test_pg_concurrency"])
ADDS = int(os.environ.get("OMNIMEM_PG_RACE_ADDS", "40"))  # adds into two sessions while another process
# deletes or forgets; a longer race for measuring: OMNIMEM_PG_RACE_ADDS=300 (at most 676)
STARTED = 9  # after this add the adder says it has started
WORDS = ["amber", "basalt", "cobalt", "dune", "ember", "fjord", "garnet", "harbor", "indigo", "juniper",
         "kelp", "lagoon", "marble", "nectar", "onyx", "pebble", "quartz", "reef", "saffron", "tundra"]


def _text(n: int) -> str:
    """A sentence whose last word (:func:`_own_word`) no other sentence has."""
    return f"note {WORDS[n % 20]} about the {WORDS[(n // 20) % 20]} {_own_word(n)}"


def _own_word(n: int) -> str:
    return "zq" + chr(97 + n // 26) + chr(97 + n % 26) + "x"  # "x": no stemming rule changes it


def _run(workers: Sequence[tuple[Callable[..., None], tuple[Any, ...]]], timeout: float = 90) -> list[Any]:
    """Start the workers together (a barrier), wait for each one's report; a hung worker fails the test."""
    barrier, out = SPAWN.Barrier(len(workers)), SPAWN.Queue()
    procs = [SPAWN.Process(target=fn, args=(n, barrier, out, *args)) for n, (fn, args) in enumerate(workers)]
    for p in procs:
        p.start()
    reports: list[Any] = [None] * len(procs)
    try:
        for _ in procs:
            n, report = out.get(timeout=timeout)
            reports[n] = report
    except queue.Empty:
        raise AssertionError(f"a worker did not finish within {timeout} s") from None
    finally:
        for p in procs:
            p.join(10)
            if p.is_alive():
                p.kill()
    assert [p.exitcode for p in procs] == [0] * len(procs)
    return reports


def _guarded(n: int, errors: list[str], step: Callable[[], Any]) -> Any:
    try:
        return step()
    except Exception as exc:  # every surfaced error counts: the test expects none
        errors.append(f"worker {n}: {type(exc).__name__}: {exc}")
        return None


# -- workers (module level: the processes import them by name) ---------------------------------------------------
def _add_all(n: int, barrier: Any, out: Any, url: str, texts: list[str]) -> None:
    errors: list[str] = []
    results: list[tuple[str, bool, str, str | None, str | None]] = []
    with Memory(url=url, embedder="fake", novelty=False) as m:
        barrier.wait(60)
        for text in texts:
            r = _guarded(n, errors, lambda: m.add(text, user_id="ann"))
            if r is not None:
                results.append((text, r.accepted, r.reason, r.id, r.duplicate_of))
    out.put((n, (results, errors)))


def _add_to_session(n: int, barrier: Any, out: Any, url: str, user: str, count: int, started: Any, done: Any) -> None:
    errors: list[str] = []
    with Memory(url=url, embedder="fake", novelty=False) as m:
        barrier.wait(60)
        for i in range(count):
            _guarded(n, errors, lambda: m.add(_text(i), user_id=user, session_id=f"s{i % 2}"))
            if i == STARTED:
                started.set()
    done.set()
    out.put((n, errors))


def _delete_newest(n: int, barrier: Any, out: Any, url: str, user: str, started: Any, done: Any) -> None:
    errors: list[str] = []
    deleted: list[str] = []
    with Memory(url=url, embedder="fake") as m:
        barrier.wait(60)
        last_round = False
        while not last_round:
            last_round = done.is_set()  # one more round after the adds end: at least one delete, always
            for session in ("s0", "s1"):
                newest = m.store.recent(Scope(user, None, session), 1)
                failed = len(errors)
                if newest:
                    _guarded(n, errors, lambda: m.delete(newest[0][0], user_id=user))
                    if len(errors) == failed:
                        deleted.append(newest[0][0])
    out.put((n, (deleted, errors)))


def _forget_user(n: int, barrier: Any, out: Any, url: str, user: str, started: Any, done: Any) -> None:
    errors: list[str] = []
    forgotten = 0
    with Memory(url=url, embedder="fake") as m:
        barrier.wait(60)
        started.wait(60)  # the first forget finds the first adds: something is always forgotten
        while True:
            forgotten += _guarded(n, errors, lambda: m.forget(user_id=user)) or 0
            if done.is_set():
                break
    out.put((n, (forgotten, errors)))


# -- what the database holds afterwards --------------------------------------------------------------------
def residue(url: str) -> dict[str, int]:
    """Counts of rows left behind by deleted units or out of step with the survivors; all 0 when sound."""
    with psycopg.connect(url) as conn:
        one = lambda sql: int(conn.execute(sql).fetchone()[0])  # noqa: E731
        found = {
            "postings of deleted units": one("SELECT COUNT(*) FROM terms t WHERE NOT EXISTS "
                                             "(SELECT 1 FROM units u WHERE u.rid = t.rid)"),
            "term_df rows off the postings": one(
                "SELECT COUNT(*) FROM (SELECT term, COUNT(*) AS df FROM terms GROUP BY term) c "
                "FULL JOIN term_df d USING (term) WHERE c.df IS DISTINCT FROM d.df"),
            "prev_id naming a deleted unit": one("SELECT COUNT(*) FROM units u WHERE prev_id IS NOT NULL AND "
                                                 "NOT EXISTS (SELECT 1 FROM units p WHERE p.id = u.prev_id)"),
            "broken session chains": one(
                "SELECT COUNT(*) FROM (SELECT prev_id, LAG(id) OVER (PARTITION BY tenant, user_id, agent_id, "
                "session_id ORDER BY rid) AS before FROM units WHERE session_id IS NOT NULL) c "
                "WHERE prev_id IS DISTINCT FROM before"),
            "counters off the units": one("SELECT COUNT(*) FROM counters WHERE docs <> (SELECT COUNT(*) FROM units) "
                                          "OR doc_len <> (SELECT COALESCE(SUM(doc_len), 0) FROM units)"),
        }
        before = conn.execute("SELECT rid, term, tf FROM terms").fetchall()
        TermIndexer(1).rebuild(conn)  # what the survivors' postings must be; rolled back below
        after = conn.execute("SELECT rid, term, tf FROM terms").fetchall()
        conn.rollback()
    found["postings unlike a rebuild"] = len(set(before) ^ set(after))
    return found


CLEAN = {"postings of deleted units": 0, "term_df rows off the postings": 0, "prev_id naming a deleted unit": 0,
         "broken session chains": 0, "counters off the units": 0, "postings unlike a rebuild": 0}


def _terms_of(url: str, words: Sequence[str]) -> int:
    from omnimem.index.sparse import tokenize

    stems = sorted({t for ws in tokenize(list(words)) for t in ws})
    with psycopg.connect(url) as conn:
        return int(conn.execute("SELECT COUNT(DISTINCT term) FROM terms WHERE term = ANY(%s)", (stems,)).fetchone()[0])


# -- the tests -------------------------------------------------------------------------------------------
def test_four_processes_adding_the_same_texts_at_once_store_each_once(pg_url: str) -> None:
    Memory(url=pg_url, embedder="fake").close()  # the embedder is recorded once, before the crowd arrives
    texts = [f"Ann's note number {i}: the {WORDS[i % 20]} shelf" for i in range(50)]
    reports = _run([(_add_all, (pg_url, texts[k:] + texts[:k])) for k in (0, 0, 25, 25)])
    assert [errors for _, errors in reports] == [[]] * 4
    with Memory(url=pg_url, embedder="fake") as m:
        stored = {u.summary: u.id for u in m.store.get(m.store.ids_in_scope(Scope("ann")))}
        assert m.stats()["units"] == 50
    assert sorted(stored) == sorted(texts)
    for text in texts:  # each text: one process stored it, the three others were told it is a duplicate of it
        seen = sorted((accepted, reason, uid or dup) for results, _ in reports for t, accepted, reason, uid, dup
                      in results if t == text)
        assert seen == [(False, "duplicate", stored[text])] * 3 + [(True, "stored", stored[text])]
    assert residue(pg_url) == CLEAN


def test_adding_to_a_session_while_another_process_deletes_its_newest_unit(pg_url: str) -> None:
    Memory(url=pg_url, embedder="fake").close()
    started, done = SPAWN.Event(), SPAWN.Event()
    added, (deleted, delete_errors) = _run([(_add_to_session, (pg_url, "bo", ADDS, started, done)),
                                             (_delete_newest, (pg_url, "bo", started, done))])
    assert added == [] and delete_errors == []  # no deadlock or serialisation error reaches the caller
    assert deleted  # the deleter's last round, after the adds, always finds a newest unit
    _check_survivors(pg_url, "bo", ADDS - len(deleted))


def test_forgetting_a_user_while_another_process_adds_for_them_leaves_nothing_behind(pg_url: str) -> None:
    Memory(url=pg_url, embedder="fake").close()
    started, done = SPAWN.Event(), SPAWN.Event()
    added, (forgotten, forget_errors) = _run([(_add_to_session, (pg_url, "cy", ADDS, started, done)),
                                               (_forget_user, (pg_url, "cy", started, done))])
    assert added == [] and forget_errors == []
    assert forgotten > STARTED  # the first forget ran after the adder's first STARTED + 1 adds
    _check_survivors(pg_url, "cy", ADDS - forgotten)


def _check_survivors(url: str, user: str, expected: int) -> None:
    """The units left are the adds not deleted, and nothing of the deleted ones is left anywhere."""
    with Memory(url=url, embedder="fake") as m:
        left = {u.summary for u in m.store.get(m.store.ids_in_scope(Scope(user)))}
    assert len(left) == expected
    gone = [n for n in range(ADDS) if _text(n) not in left]
    assert residue(url) == CLEAN
    assert _terms_of(url, [_own_word(n) for n in gone]) == 0  # no survivor kept a deleted unit's own word
    assert _terms_of(url, [_own_word(n) for n in range(ADDS) if n not in gone]) == expected


# -- a real deadlock, made on purpose ----------------------------------------------------------------------
def _deadlocked_add(url: str, store: PostgresStore, uid: str) -> BaseException | None:
    """Add one unit while another session holds the counters row and then asks for the add's scope lock.

    The add waits for the counters (its last step) holding its scope lock; the other session then waits
    for that lock: a cycle. The add's server process detects it (deadlock_timeout 1 s; the other waits
    20 s) and its transaction is the one PostgreSQL aborts. Returns what the add raised, if anything.
    """
    scope = Scope("dee")
    caught: list[BaseException] = []

    def add() -> None:
        try:
            store.insert([unit(uid, scope)], {})
        except BaseException as exc:  # handed to the test thread
            caught.append(exc)

    with psycopg.connect(url) as other, psycopg.connect(url, autocommit=True) as watch:
        other.execute("SET deadlock_timeout = '20s'")
        other.execute("SELECT 1 FROM counters FOR UPDATE")
        adder = threading.Thread(target=add)
        adder.start()
        for _ in range(400):  # until the add waits for the counters row
            if watch.execute("SELECT COUNT(*) FROM pg_locks WHERE NOT granted").fetchone()[0]:
                break
            time.sleep(0.05)
        else:
            raise AssertionError("the add never waited for the counters row")
        other.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (locks.scope_key(scope),))
        other.rollback()  # granted once PostgreSQL aborted the add's transaction; a retry may go on
        adder.join(30)
    return caught[0] if caught else None


def test_a_deadlocked_add_is_retried_and_stored_once(pg_url: str, caplog: pytest.LogCaptureFixture) -> None:
    store = PostgresStore(pg_url)
    store.init_meta("fake", 4)
    with caplog.at_level(logging.DEBUG, logger="omnimem.store.postgres.store"):
        assert _deadlocked_add(pg_url, store, "after-a-deadlock") is None
    assert any("retrying (1)" in r.getMessage() and "deadlock detected" in r.getMessage() for r in caplog.records)
    assert [u.id for u in store.get(["after-a-deadlock"])] == ["after-a-deadlock"]
    assert store.stats()["units"] == 1
    store.close()
    assert residue(pg_url) == CLEAN


def test_an_add_out_of_retries_says_it_lost_to_concurrent_writers(pg_url: str) -> None:
    store = PostgresStore(pg_url)
    store.init_meta("fake", 4)
    store.write_attempts = 1
    error = _deadlocked_add(pg_url, store, "never")
    assert isinstance(error, WriteConflictError)
    assert "deadlock detected" in str(error) and "nothing of it was stored" in str(error)
    assert "connection" not in str(error)
    assert store.get(["never"]) == [] and store.stats()["units"] == 0
    store.close()


def test_deletes_spanning_many_scopes_and_users_take_coarser_locks_and_leave_nothing(pg_url: str) -> None:
    store = PostgresStore(pg_url)
    store.init_meta("fake", 4)
    many = locks.MANY + 8
    sessions = [unit(f"s{i}", Scope("ann", None, f"s{i}")) for i in range(many)]
    users = [unit(f"u{i}", Scope(f"user{i}", None, "s")) for i in range(many)]
    store.insert(sessions + users, {})  # an add across more than MANY users: the store-wide lock
    assert len(store.delete([u.id for u in sessions])) == many  # one user's lock, not one per session
    assert len(store.delete([u.id for u in users])) == many  # the store-wide lock
    assert store.stats()["units"] == 0
    store.close()
    assert residue(pg_url) == CLEAN
    assert locks.lock_plan([u.scope for u in sessions]) == [("omnimem:writers", True), ("omnimem:tenant:ann", False)]
    assert locks.lock_plan([u.scope for u in users]) == [("omnimem:writers", False)]
