"""A write about to embed lets the searches in flight finish first, for a bounded time.

``WriterState.yield_to_reads`` is what a write calls before its embedding call (the
``serve-load --storm-seconds`` benchmark measures what it does for searches
during a write storm): it returns as soon as no search is in flight, and after
its bound when searches never stop, so writes are slowed, never stopped.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from omnimem import Memory
from omnimem.embed.base import Vectors
from omnimem.embed.fake import FakeEmbedder
from omnimem.engine.ingest.pipeline import READ_CHUNK, READ_CHUNK_MAX, SEARCH_RECENT_S


def test_a_write_waits_for_the_search_in_flight_and_no_longer() -> None:
    with Memory(embedder="fake") as m:
        state = m.engine.state  # type: ignore[attr-defined]
        started, release = threading.Event(), threading.Event()

        def search_in_flight() -> None:
            with state.reading():
                started.set()
                release.wait(5)

        reader = threading.Thread(target=search_in_flight)
        reader.start()
        started.wait(5)
        threading.Timer(0.2, release.set).start()
        begun = time.monotonic()
        state.yield_to_reads(5.0)  # returns when the search ends, long before its bound
        waited = time.monotonic() - begun
        reader.join(5)
        assert 0.15 <= waited < 4.0

        started.clear()
        release.clear()
        reader = threading.Thread(target=search_in_flight)
        reader.start()
        started.wait(5)
        begun = time.monotonic()
        state.yield_to_reads(0.2)  # the search goes on: the write goes ahead after its bound
        waited = time.monotonic() - begun
        release.set()
        reader.join(5)
        assert 0.15 <= waited < 4.0

        begun = time.monotonic()
        state.yield_to_reads(5.0)  # nothing in flight: no wait
        assert time.monotonic() - begun < 1.0
        assert m.add("a write after all that", user_id="u").accepted


class CallSizes(FakeEmbedder):
    """The fake embedder, noting how many texts each call embedded."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[int] = []

    def embed(self, texts: Sequence[str]) -> Vectors:
        self.calls.append(len(texts))
        return super().embed(texts)


def _turns(n: int, tag: str) -> list[dict[str, str]]:
    return [{"speaker": "Ann" if i % 2 else "Bo", "text": f"{tag} turn {i}: the {i}th thing about plan {tag}"}
            for i in range(n)]


def test_a_group_is_embedded_in_short_calls_only_while_searches_come_in() -> None:
    embedder = CallSizes()
    with Memory(embedder=embedder) as m:
        state = m.engine.state  # type: ignore[attr-defined]
        assert not state.searches_recent(SEARCH_RECENT_S)  # nothing searched yet: a group is one call
        m.add_dialogue(_turns(20, "quiet"), user_id="u")
        assert embedder.calls == [20]

        embedder.calls.clear()
        started, release = threading.Event(), threading.Event()

        def search_in_flight() -> None:
            with state.reading(search=True):
                started.set()
                release.wait(10)

        reader = threading.Thread(target=search_in_flight)
        reader.start()
        started.wait(5)
        try:
            assert state.searches_recent(SEARCH_RECENT_S)
            m.add_dialogue(_turns(20, "busy"), user_id="u")  # searches coming in: the group is cut into short calls
            assert embedder.calls == [READ_CHUNK, READ_CHUNK, 20 - 2 * READ_CHUNK]
            embedder.calls.clear()
            m.add_dialogue(_turns(READ_CHUNK_MAX + 1, "import"), user_id="u")  # a large call keeps its batch
            assert embedder.calls == [READ_CHUNK_MAX + 1]
        finally:
            release.set()
            reader.join(5)

        busy = _vectors(m, "busy")
    with Memory(embedder=CallSizes()) as quiet:  # the same turns written with no search about: one call
        quiet.add_dialogue(_turns(20, "quiet"), user_id="u")
        quiet.add_dialogue(_turns(20, "busy"), user_id="u")
        alone = _vectors(quiet, "busy")
    assert len(busy) == 20 and busy.keys() == alone.keys()  # each unit got its own text's vector, in order
    assert all(np.array_equal(busy[text], alone[text]) for text in busy)


def _vectors(m: Memory, tag: str) -> dict[str, Any]:
    ctx = m.search(f"{tag} turn thing plan", user_id="u", top_k=200, budget=100_000)
    return {h.unit.summary: h.unit.embedding for h in ctx.hits if h.unit.summary.startswith(tag)}


def test_searches_seen_lately_count_as_coming_in_and_other_reads_do_not() -> None:
    with Memory(embedder="fake") as m:
        state = m.engine.state  # type: ignore[attr-defined]
        added = m.add("one thing to find", user_id="u")
        assert added.id is not None
        m.get(added.id, user_id="u")  # reads, not searches: writes keep their one call
        m.units(user_id="u")
        m.stats()
        assert not state.searches_recent(60.0)
        m.search("thing", user_id="u")
        assert state.searches_recent(60.0)
        time.sleep(0.05)
        assert not state.searches_recent(0.01)
