"""Search slots: the CPU part of a search (ranking, packing) runs in a slot its caller hands over; a model wait
holds none.

A server bounds how many searches use the CPU at once (``omnimem serve --search-concurrency``). A search
that waits for a model (``planner="llm"``, or an ask) must not hold one of those slots while it waits,
or a slow model slows every user. So the caller wraps the search in :func:`search_slots` with a slot
(a callable that returns a context manager: entered, the slot is held), and the engine enters
:func:`cpu` around its CPU stages only: a plain or offline search once for all of it, an LLM-planned
search once per round's ranking and once per packing. Nested :func:`cpu` blocks share the outer one's
slot. Without :func:`search_slots` (in-process use, a remote engine's own process) :func:`cpu` takes
nothing. The engine contract (:mod:`omnimem.engine.contract`) does not change: the slot travels with
the caller's context (a :class:`~contextvars.ContextVar`), into the thread that runs the search.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from contextvars import ContextVar

Slot = Callable[[], AbstractContextManager[object]]

_slot: ContextVar[Slot | None] = ContextVar("omnimem_search_slot", default=None)
_held: ContextVar[bool] = ContextVar("omnimem_search_slot_held", default=False)


@contextmanager
def search_slots(slot: Slot) -> Iterator[None]:
    """Searches run inside take ``slot()`` around their CPU stages, and only there."""
    token = _slot.set(slot)
    try:
        yield
    finally:
        _slot.reset(token)


@contextmanager
def cpu() -> Iterator[None]:
    """Hold the caller's search slot for the block (none set, or one held already by an outer block: nothing)."""
    slot = _slot.get()
    if slot is None or _held.get():
        yield
        return
    with slot():
        token = _held.set(True)
        try:
            yield
        finally:
            _held.reset(token)
