"""Concurrent adds are written as one group (omnimem.engine.writer) and each still gets exactly its own result.

Every burst here is made deterministic the same way: the writer is paused (its
lock held), the adds start and queue up, the test waits until all of them are
queued, then lets the leader take them: they form exactly one group. No test
depends on timing.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import pytest

from omnimem import AddResult, Memory
from omnimem.contract.caller import acting_as
from omnimem.errors import InvalidInputError, OmnimemError, StoreError
from omnimem.engine.ingest.prepare import prepare
from omnimem.mcp import create_mcp
from omnimem.mau import Scope
from tests.conftest import open_memory
from tests.mcp.conftest import connect
from tests.postgres_server import PostgresServer
from tests.serving import LiveServer

WAIT = 60.0  # seconds a test waits for its threads to queue: a bound on a hang, never a measured time


@pytest.fixture(params=["path", "postgresql"])
def engine(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def _fact(n: int) -> str:
    """Texts that share no content words, so the novelty filter keeps every one."""
    words = ["harbour", "violin", "glacier", "orchard", "lantern", "meadow", "compass", "saffron", "quarry",
             "tundra", "falcon", "pepper", "canyon", "marble", "willow", "copper", "lagoon", "thistle",
             "beacon", "pebble", "walnut", "zephyr", "juniper", "cobalt", "raven", "tulip", "basalt", "ember"]
    return f"{words[n % len(words)]} {words[(n * 7 + 3) % len(words)]} note number {n} for the {n}th visit"


class Burst:
    """Calls started one at a time in a known queue order while the writer is paused, then released together."""

    def __init__(self, mem: Memory) -> None:
        self.writer = mem.engine.writer
        self.threads: list[threading.Thread] = []
        self.outcomes: dict[int, Any] = {}

    def start(self, call: Callable[[], Any], queued_after: int | None = None) -> None:
        """Start ``call`` in a thread; wait until ``queued_after`` calls are queued (None: it never queues)."""
        n = len(self.threads)

        def run() -> None:
            try:
                self.outcomes[n] = call()
            except OmnimemError as exc:
                self.outcomes[n] = exc

        thread = threading.Thread(target=run)
        self.threads.append(thread)
        thread.start()
        if queued_after is None:
            thread.join(WAIT)
            assert not thread.is_alive()
        else:
            assert self.writer.wait_queued(queued_after, WAIT), "the calls did not queue"

    def join(self) -> list[Any]:
        for thread in self.threads:
            thread.join(WAIT)
            assert not thread.is_alive(), "a call never returned"
        return [self.outcomes[n] for n in range(len(self.threads))]


@pytest.fixture
def mem(engine: str, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Memory]:
    server: PostgresServer | None = request.getfixturevalue("postgres") if engine == "postgresql" else None
    with open_memory(engine, tmp_path, server) as m:
        yield m
    if server is not None and m.url is not None:
        server.drop(m.url)


def test_a_burst_of_adds_is_one_group_and_each_is_found(mem: Memory) -> None:
    burst = Burst(mem)
    before = mem.stats()["writer"]
    with burst.writer.paused():
        for n in range(16):
            burst.start(lambda n=n: _acting(f"key:client-{n}", lambda: mem.add(_fact(n), user_id=f"u{n % 4}")), n + 1)
        burst.start(lambda: mem.add_dialogue([], user_id="u0"), 17)  # an empty call in the group: nothing, no error
    *results, empty = burst.join()
    after = mem.stats()["writer"]
    assert after["groups"] - before["groups"] == 1 and after["adds"] - before["adds"] == 17
    assert empty == []
    assert all(isinstance(r, AddResult) and r.accepted for r in results), results
    for n, result in enumerate(results):  # searchable as soon as the add returned, in its own scope only
        hits = [h.unit.id for h in mem.search(_fact(n), user_id=f"u{n % 4}", top_k=3).hits]
        assert result.id in hits
        (event,) = [e for e in mem.log(user_id=f"u{n % 4}") if result.id in e.unit_ids]
        assert event.actor == f"key:client-{n}"  # the leader wrote each event in its own caller's name


def _acting(actor: str, call: Callable[[], AddResult]) -> AddResult:
    with acting_as(actor):
        return call()


def test_a_group_indexed_at_once_catches_up_with_another_process_writing_between(tmp_path: Path) -> None:
    """The group's transactions are indexed in one update; another process's write among them is seen too."""
    path = tmp_path / "mem"
    with Memory(path, embedder="fake") as mine, Memory(path, embedder="fake") as other:
        burst = Burst(mine)
        with burst.writer.paused():
            for n in range(4):
                burst.start(lambda n=n: mine.add(_fact(n), user_id="ann"), n + 1)
            theirs = other.add(_fact(20), user_id="ann")  # committed before the group's transactions
        results = burst.join()
        assert all(r.accepted for r in results)
        for n, result in [*enumerate(results), (20, theirs)]:
            assert result.id in [h.unit.id for h in mine.search(_fact(n), user_id="ann", top_k=3).hits]
        assert mine.stats()["index"] == {"dense": 5, "sparse": 5}  # each unit indexed once


def test_identical_texts_at_once_store_one(mem: Memory) -> None:
    burst = Burst(mem)
    with burst.writer.paused():
        for n in range(8):
            burst.start(lambda: mem.add("the kettle is in the left cupboard", user_id="alice"), n + 1)
    results = burst.join()
    stored = [r for r in results if r.accepted]
    assert len(stored) == 1 and stored[0] == results[0]  # the first queued, as one call after the other
    assert all(r.reason == "duplicate" and r.duplicate_of == stored[0].id for r in results[1:])
    again = Burst(mem)  # a group with nothing to store: every add a duplicate of the stored unit
    with again.writer.paused():
        for n in range(3):
            again.start(lambda: mem.add("the kettle is in the left cupboard", user_id="alice"), n + 1)
    assert [r.duplicate_of for r in again.join()] == [stored[0].id] * 3
    assert mem.count_units(user_id="alice") == 1


def test_a_group_decides_like_calls_one_after_the_other(tmp_path: Path) -> None:
    calls: list[tuple[str, str, str | None]] = [  # (text, user, session): repeats, near-repeats, other scopes
        ("I moved to Lisbon in March", "ann", None), ("I moved to Lisbon in March", "ann", None),
        ("I moved to Lisbon in March", "bob", None), ("I moved to Lisbon in March !", "ann", None),
        ("my sister plays the cello", "ann", "s1"), ("my sister plays the cello", "ann", "s1"),
        ("the cat is called Miso", "bob", "s2"), ("we bought a red bicycle", "ann", None),
        ("the cat is called Miso", "bob", "s3"), ("we bought a red bicycle", "ann", "s1"),
    ]

    def add(mem: Memory, call: tuple[str, str, str | None]) -> AddResult:
        return mem.add(call[0], user_id=call[1], session_id=call[2])

    with Memory(tmp_path / "one-by-one", embedder="fake") as mem:
        sequential = [add(mem, c) for c in calls]
    with Memory(tmp_path / "grouped", embedder="fake") as mem:
        burst = Burst(mem)
        with burst.writer.paused():
            for n, call in enumerate(calls):
                burst.start(lambda call=call: add(mem, call), n + 1)
        grouped = burst.join()
        assert mem.stats()["writer"]["largest_group"] == len(calls)

    def shape(results: list[AddResult]) -> list[tuple[Any, ...]]:  # ids differ between stores: compare positions
        where = {r.id: n for n, r in enumerate(results) if r.id}

        def positional(reason: str) -> str:  # "redundant: ... with unit <id>" names the unit by its call
            for unit_id, n in where.items():
                reason = reason.replace(unit_id, f"<call {n}>")
            return reason

        return [(r.accepted, positional(r.reason), r.similarity, where.get(r.duplicate_of or "", r.duplicate_of))
                for r in results]

    assert shape(grouped) == shape(sequential)
    assert sum(r.accepted for r in sequential) < len(calls)  # the comparison covers skipped adds too


def test_one_failing_add_does_not_fail_the_others(mem: Memory) -> None:
    taken = mem.add("an earlier unit whose id the bad add reuses", user_id="carol")
    assert taken.id is not None
    clash = replace(prepare("a unit that cannot be stored: its id is taken", time=None, speaker=None, source_id=None,
                            scope=Scope("carol"), tz=mem.engine.tz), unit_id=taken.id)
    burst = Burst(mem)
    before = mem.stats()["writer"]
    with burst.writer.paused():
        for n in range(2):
            burst.start(lambda n=n: mem.add(_fact(n), user_id="carol"), n + 1)
        burst.start(lambda: mem.engine.ingest([clash]), 3)
        burst.start(lambda: mem.add("   ", user_id="carol"))  # bad input: refused in its caller, never queued
        for n in range(2, 5):
            burst.start(lambda n=n: mem.add(_fact(n), user_id="carol"), n + 2)
    results = burst.join()
    assert mem.stats()["writer"]["groups"] - before["groups"] == 1
    assert isinstance(results[2], StoreError)  # its own typed error, raised in its own thread
    assert isinstance(results[3], InvalidInputError)
    good = [results[0], results[1], *results[4:]]
    assert all(isinstance(r, AddResult) and r.accepted for r in good), results
    for n, result in enumerate(good):
        assert result.id in [h.unit.id for h in mem.search(_fact(n), user_id="carol", top_k=3).hits]
    assert mem.count_units(user_id="carol") == 6  # the earlier unit and five good adds; nothing of the bad one
    assert mem.get(taken.id, user_id="carol").summary == "an earlier unit whose id the bad add reuses"


def test_a_burst_of_24_http_adds_is_acknowledged_and_found(tmp_path: Path) -> None:
    backend = Memory(tmp_path / "served", embedder="fake")
    live = LiveServer(backend, auth=False, rate_limit=None)
    try:
        burst = Burst(backend)
        before = backend.stats()["writer"]

        def post(n: int) -> dict[str, Any]:
            with httpx.Client(base_url=live.url, timeout=WAIT) as client:
                response = client.post("/v1/units", json={"text": _fact(n), "user_id": f"web-{n % 3}"})
                response.raise_for_status()
                return dict(response.json())

        with burst.writer.paused():
            for n in range(24):
                burst.start(lambda n=n: post(n), n + 1)
        results = burst.join()
        assert backend.stats()["writer"]["groups"] - before["groups"] == 1
        assert all(r["accepted"] for r in results), results
        with httpx.Client(base_url=live.url, timeout=WAIT) as client:
            for n, result in enumerate(results):
                found = client.post("/v1/search", json={"query": _fact(n), "user_id": f"web-{n % 3}", "top_k": 3})
                assert result["id"] in [h["unit"]["id"] for h in found.json()["hits"]]
    finally:
        live.stop()
        backend.close()


def test_concurrent_mcp_adds_form_one_group(tmp_path: Path) -> None:
    with Memory(tmp_path / "mcp", embedder="fake") as memory, connect(create_mcp(memory)) as session:
        burst = Burst(memory)
        before = memory.stats()["writer"]
        with burst.writer.paused():
            for n in range(8):
                burst.start(lambda n=n: session.call("add", text=_fact(n), user_id="dana"), n + 1)
        results = burst.join()
        assert memory.stats()["writer"]["groups"] - before["groups"] == 1
        assert all(r["accepted"] for r in results), results
        for n, result in enumerate(results):
            assert result["id"] in [h.unit.id for h in memory.search(_fact(n), user_id="dana", top_k=3).hits]
