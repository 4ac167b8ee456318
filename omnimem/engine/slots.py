"""Search slots: the CPU part of a search (ranking, packing) runs in a slot its caller hands over; a model wait
holds none.

A server bounds how many searches use the CPU at once (``omnimem serve --search-concurrency``). A search
that waits for a model (``planner="llm"``, or an ask) must not hold one of those slots while it waits,
or a slow model slows every user. So the caller wraps the search in :func:`search_slots` with a slot
(a callable that returns a context manager: entered, the slot is held), and the engine enters
:func:`cpu` around its CPU stages only: a plain or offline search once for all of it, an LLM-planned
search once per round's ranking and once per packing. A query's embedding (the wait for the model gate,
:mod:`omnimem.embed.gate`, and the model's call) holds none: a plain search embeds its query before it takes
the slot, and a ranking inside a slot gives it back while it embeds (:func:`off_cpu`). Nested :func:`cpu`
blocks share the outer one's slot. Without :func:`search_slots` (in-process use, a remote engine's own process) :func:`cpu` takes
nothing. The engine contract (:mod:`omnimem.contract`) does not change: the slot travels with
the caller's context (a :class:`~contextvars.ContextVar`), into the thread that runs the search.
"""

from __future__ import annotations

from omnimem.contract.caller import (  # beside the caller's context
    Slot as Slot,
    cpu as cpu,
    off_cpu as off_cpu,
    search_slots as search_slots,
)
