"""Closing a Memory while other threads search: in-flight searches finish, later ones get a typed error."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest

from omnimem import Memory
from omnimem.errors import StoreError


@pytest.mark.parametrize("planner", [None, "offline"])
def test_close_waits_for_searches_in_flight_and_refuses_new_ones(tmp_path: Path, planner: str | None) -> None:
    """A search under way goes on to its end (a deeper reading, a planner's later rounds) after close began."""
    mem = Memory(tmp_path / "mem", embedder="fake", planner=planner)
    mem.add_dialogue([{"text": f"note {i} about the lake house and the boat", "speaker": "Ann"} for i in range(200)],
                     user_id="ann", session_id="s1")
    inside = threading.Barrier(5)  # four searches past their open check, and the closing thread
    search = mem.engine.state.search
    real_within = search.within

    calls: dict[int, int] = {}  # rankings per searching thread

    def slow_within(where: Any) -> Any:  # every search pauses after it passed the open check, before the indexes
        me = threading.get_ident()
        calls[me] = calls.get(me, 0) + 1
        if calls[me] == 1 and not inside.broken:  # its first ranking; short notes are then read deeper
            inside.wait(timeout=30)
        time.sleep(0.3)
        return real_within(where)

    search.within = slow_within  # type: ignore[method-assign]
    results: list[str] = []
    lock = threading.Lock()

    def searcher() -> None:
        try:
            ctx = mem.search("the boat at the lake", user_id="ann", budget=2000)
            outcome = f"hits {len(ctx.hits) > 0}"
        except StoreError as exc:
            outcome = str(exc)
        except Exception as exc:  # noqa: BLE001 - a raw sqlite/numpy error is what this test forbids
            outcome = f"untyped {type(exc).__name__}: {exc}"
        with lock:
            results.append(outcome)

    threads = [threading.Thread(target=searcher) for _ in range(4)]
    for t in threads:
        t.start()
    inside.wait(timeout=30)  # all four are in flight
    mem.close()  # waits for them
    for t in threads:
        t.join(timeout=60)
    assert results == ["hits True"] * 4
    assert len(calls) == 4 and min(calls.values()) >= 2  # each ranked again after close began (read deeper, or
    # a planner's next round), and went on
    with pytest.raises(StoreError, match="this Memory is closed"):
        mem.search("boat", user_id="ann")
    with Memory(tmp_path / "mem", embedder="fake") as again:  # closed cleanly: indexes saved, store intact
        assert again.search("boat", user_id="ann").hits
