"""A write about to embed lets the searches in flight finish first, for a bounded time.

``Parts.yield_to_reads`` is what a write calls before its embedding call (the
``serve-load --storm-seconds`` benchmark measures what it does for searches
during a write storm): it returns as soon as no search is in flight, and after
its bound when searches never stop, so writes are slowed, never stopped.
"""

from __future__ import annotations

import threading
import time

from omnimem import Memory


def test_a_write_waits_for_the_search_in_flight_and_no_longer() -> None:
    with Memory(embedder="fake") as m:
        parts = m.engine.parts  # type: ignore[attr-defined]
        started, release = threading.Event(), threading.Event()

        def search_in_flight() -> None:
            with parts.reading():
                started.set()
                release.wait(5)

        reader = threading.Thread(target=search_in_flight)
        reader.start()
        started.wait(5)
        threading.Timer(0.2, release.set).start()
        begun = time.monotonic()
        parts.yield_to_reads(5.0)  # returns when the search ends, long before its bound
        waited = time.monotonic() - begun
        reader.join(5)
        assert 0.15 <= waited < 4.0

        started.clear()
        release.clear()
        reader = threading.Thread(target=search_in_flight)
        reader.start()
        started.wait(5)
        begun = time.monotonic()
        parts.yield_to_reads(0.2)  # the search goes on: the write goes ahead after its bound
        waited = time.monotonic() - begun
        release.set()
        reader.join(5)
        assert 0.15 <= waited < 4.0

        begun = time.monotonic()
        parts.yield_to_reads(5.0)  # nothing in flight: no wait
        assert time.monotonic() - begun < 1.0
        assert m.add("a write after all that", user_id="u").accepted
