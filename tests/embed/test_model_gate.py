"""Queries first, with bounded waits: the model gate orders a process's query embeddings and write slices.

The models here block until the test lets each call end, so every order is decided by the gate, not by
timing; the test waits (polling, with no timed assertion) until a caller is seen waiting at the gate.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest

from omnimem import Memory
from omnimem.embed import query as query_module
from omnimem.embed.base import Vectors, embed_queries
from omnimem.embed.fake import FakeEmbedder
from omnimem.embed.gate import SLICE, ModelGate
from omnimem.embed.query import FastQueries
from omnimem.contract.caller import search_slots

DIM = 8


def vectors(texts: Sequence[str]) -> Vectors:
    """A text's vector says which text it is (its first number), so order and loss show."""
    out = np.zeros((len(texts), DIM), dtype=np.float32)
    for row, text in enumerate(texts):
        out[row, 0] = float(text.split()[-1])
    return out


class Held:
    """A model whose calls are logged and each wait until the test releases it."""

    dim = DIM

    def __init__(self, name: str, log: list[tuple[str, list[str]]]) -> None:
        self.name = name
        self.log = log
        self.started = threading.Semaphore(0)
        self.go = threading.Semaphore(0)

    def embed(self, texts: Sequence[str]) -> Vectors:
        self.log.append((self.name, list(texts)))
        self.started.release()
        assert self.go.acquire(timeout=60), "the test never released this call"
        return vectors(texts)


def wait_until(condition: Callable[[], bool]) -> None:
    """Poll until ``condition`` holds (the gate's state, not a duration, decides the test)."""
    for _ in range(60_000):
        if condition():
            return
        time.sleep(0.001)
    raise AssertionError("the condition never held")


def started(target: Callable[[], object]) -> tuple[threading.Thread, list[object]]:
    out: list[object] = []
    thread = threading.Thread(target=lambda: out.append(target()), daemon=True)
    thread.start()
    return thread, out


def test_a_query_during_a_write_batch_is_served_before_the_batchs_remaining_slices() -> None:
    log: list[tuple[str, list[str]]] = []
    stored, queries = Held("passage", log), Held("query", log)
    model = FastQueries(stored, queries, ModelGate(passage_wait=60.0))  # writes wait for queries here
    queries.go.release()
    embed_queries(model, ["a first question 0"])  # queries are about: writes are cut into slices
    texts = [f"note {n:02d}" for n in range(3 * SLICE)]  # of one length: slices follow the order given
    writer, written = started(lambda: model.embed(texts))
    assert stored.started.acquire(timeout=60)  # the first slice is embedding
    searcher, asked = started(lambda: embed_queries(model, ["where did I go 99"]))
    wait_until(lambda: model.gate.waiting() == (1, 0))  # the query waits for that slice only
    stored.go.release()  # the first slice ends: the query goes next
    assert queries.started.acquire(timeout=60)
    queries.go.release()
    for _ in range(2):  # then the batch's remaining slices
        stored.go.release()
    writer.join(60)
    searcher.join(60)
    assert [who for who, _ in log] == ["query", "passage", "query", "passage", "passage"]
    assert [texts for who, texts in log if who == "passage"] == [texts[:SLICE], texts[SLICE:2 * SLICE],
                                                                 texts[2 * SLICE:]]
    assert np.array_equal(written[0], vectors(texts))  # every vector, in order: nothing lost or reordered
    assert np.array_equal(asked[0], vectors(["where did I go 99"]))


def test_with_no_query_about_a_batch_is_not_cut_for_queries() -> None:
    log: list[tuple[str, list[str]]] = []
    stored = Held("passage", log)
    model = FastQueries(stored, Held("query", log), ModelGate())
    texts = [f"note {n:02d}" for n in range(20)]
    stored.go.release()
    assert np.array_equal(model.embed(texts), vectors(texts))
    assert log == [("passage", texts)]  # one call: a burst of adds keeps its one batch


@pytest.mark.parametrize("passage_wait, order", [(60.0, ["q1", "q2", "slice"]), (0.0, ["q1", "slice", "q2"])])
def test_a_slice_waits_for_queries_at_most_its_bound(passage_wait: float, order: list[str]) -> None:
    gate = ModelGate(passage_wait=passage_wait, query_width=1)  # one query at a time: q2 waits for q1
    served: list[str] = []
    first_in, first_go = threading.Event(), threading.Event()

    def query(name: str, hold: bool = False) -> None:
        with gate.query():
            served.append(name)
            if hold:
                first_in.set()
                assert first_go.wait(60)

    def passage() -> None:
        with gate.passage():
            served.append("slice")

    threads = [threading.Thread(target=query, args=("q1", True))]
    threads[0].start()
    assert first_in.wait(60)  # q1 holds the gate
    threads.append(threading.Thread(target=query, args=("q2",)))
    threads[1].start()
    wait_until(lambda: gate.waiting() == (1, 0))
    threads.append(threading.Thread(target=passage))
    threads[2].start()
    wait_until(lambda: gate.waiting() == (1, 1))  # a query and a slice wait for q1 (a bound of 0: past it at once)
    first_go.set()
    for thread in threads:
        thread.join(60)
    assert served == order


def test_no_write_is_lost_or_reordered_while_searches_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(query_module.QUERY_EQUIVALENTS, "fake", "fake")  # a query model for the fake store
    with Memory(tmp_path / "m", embedder="fake", novelty=False) as mem:
        assert isinstance(mem.embedder, FastQueries) and isinstance(mem.embedder.stored, FakeEmbedder)
        acknowledged: dict[int, list[str]] = {n: [] for n in range(4)}
        stop = threading.Event()

        def writer(n: int) -> None:
            for i in range(20):
                result = mem.add(f"writer {n} wrote note number {i} about the harbour", user_id=f"u{n}")
                assert result.accepted and result.id is not None
                acknowledged[n].append(result.id)

        def searcher() -> None:
            while not stop.is_set():
                mem.search("what did the writer note about the harbour", user_id="u0")

        searchers = [threading.Thread(target=searcher) for _ in range(2)]
        writers = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
        for thread in searchers + writers:
            thread.start()
        for thread in writers:
            thread.join(120)
        stop.set()
        for thread in searchers:
            thread.join(120)
        for n, ids in acknowledged.items():
            listed = [u.id for u in mem.units(user_id=f"u{n}", limit=100)]
            assert listed == ids  # all 20 stored, in the order they were written
            for i, unit_id in enumerate(ids):
                text = mem.get(unit_id, user_id=f"u{n}").summary
                assert text == f"writer {n} wrote note number {i} about the harbour"


def test_a_slice_waits_for_the_quiet_time_after_a_query_and_no_longer() -> None:
    now = [0.0]
    gate = ModelGate(passage_wait=60.0, quiet=0.015, clock=lambda: now[0])  # the test moves the clock
    with gate.query():
        pass  # a query took the gate at 0.0: its search is ranking and packing now
    went = threading.Event()

    def passage() -> None:
        with gate.passage():
            went.set()

    thread = threading.Thread(target=passage)
    thread.start()
    wait_until(lambda: gate.waiting() == (0, 1))
    for _ in range(20):  # the slice keeps waiting while the clock stands still inside the quiet time
        time.sleep(0.002)
        assert not went.is_set()
    now[0] = 0.015  # the quiet time is over: the slice goes, with no query waiting
    thread.join(60)
    assert went.is_set() and gate.served == {"queries": 1, "slices": 1, "slices_overdue": 0}


def test_queries_run_side_by_side_and_a_slice_waits_for_them_all() -> None:
    gate = ModelGate(passage_wait=60.0, quiet=0.0, query_width=2)
    inside = threading.Semaphore(0)
    leave = [threading.Event(), threading.Event()]
    served: list[str] = []

    def query(n: int) -> None:
        with gate.query():
            inside.release()
            assert leave[n].wait(60)
            served.append(f"q{n}")

    def passage() -> None:
        with gate.passage():
            served.append("slice")

    queries = [threading.Thread(target=query, args=(n,)) for n in range(2)]
    for thread in queries:
        thread.start()
    for _ in range(2):  # both hold the gate at once (one core each)
        assert inside.acquire(timeout=60)
    writer = threading.Thread(target=passage)
    writer.start()
    wait_until(lambda: gate.waiting() == (0, 1))
    leave[1].set()
    queries[1].join(60)
    leave[0].set()
    for thread in (queries[0], writer):
        thread.join(60)
    assert served == ["q1", "q0", "slice"]  # the slice went only once neither query held the gate


@pytest.mark.parametrize("planner", ["none", "offline"])
def test_a_search_embeds_its_query_with_no_search_slot_held(tmp_path: Path, planner: str) -> None:
    """A server's search slot (``search_slots``) is held for the ranking and packing, not for the query's wait
    at the gate and its model call: another search whose query is embedded ranks meanwhile."""
    held: list[bool] = []  # True while the slot is held
    embedded_holding: list[bool] = []  # whether the slot was held at each query's model call
    taken: list[str] = []

    class Recording(FakeEmbedder):
        def embed(self, texts: Sequence[str]) -> Vectors:
            if any("daughter" in t for t in texts):
                embedded_holding.append(bool(held))
            return np.asarray(super().embed(texts))

    @contextmanager
    def slot() -> Iterator[None]:
        held.append(True)
        taken.append("slot")
        try:
            yield
        finally:
            held.pop()

    with Memory(tmp_path / "store", embedder=Recording()) as memory:
        memory.add("My daughter Lily started piano lessons.", user_id="u")
        with search_slots(slot):
            ctx = memory.search("What does my daughter play?", user_id="u", planner=planner)
    assert [h.text for h in ctx.hits] == ["My daughter Lily started piano lessons."]
    assert embedded_holding and not any(embedded_holding)
    assert taken and held == []  # taken for the ranking and packing, and given back
