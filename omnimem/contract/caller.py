"""Who is calling: the context a shell sets around its calls to the facade, read by the engine below.

A surface (the HTTP routes, the MCP tools, the CLI, an integration) says how its
calls arrive with :func:`writing_via` (and the highest trust its caller may
write, an API key's ``max_trust``), and whom the audit log names with
:func:`acting_as`; a server hands its searches a CPU slot with
:func:`search_slots`, which the engine takes around its CPU stages only
(:func:`cpu`) and gives back while it waits for a model (:func:`off_cpu`). Each is a :class:`~contextvars.ContextVar`: it holds in the
thread or task that calls the facade, and a thread that acts for it carries it
over. Outside any block a call is a direct Python call (surface ``python``,
the engine's own actor, no slot).

Search slots: a server bounds how many searches use the CPU at once
(``omnimem serve --search-concurrency``). A search must not hold one of those
slots while it waits for a model (an LLM for ``planner="llm"`` or an ask, or
the embedder behind a write's slice, :mod:`omnimem.embed.gate`), or a slow
model slows every user. So the engine enters :func:`cpu` around its CPU
stages only: a plain or offline search once for all of it, after its query is
embedded; an LLM-planned search once per round's ranking and once per packing.
A ranking inside a slot gives it back while it embeds (:func:`off_cpu`).
Nested :func:`cpu` blocks share the outer one's slot. Without
:func:`search_slots` (in-process use, a remote engine's own process) :func:`cpu`
takes nothing. The engine contract does not change: the slot travels with the
caller's context into the thread that runs the search.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from omnimem.contract.checks import check_trust
from omnimem.errors import InvalidInputError
from omnimem.mau import TRUSTED

SURFACES = ("python", "cli", "http", "mcp", "import")  # and "integration:<name>"
Slot = Callable[[], AbstractContextManager[object]]


@dataclass(frozen=True, slots=True)
class Channel:
    """How the current call arrived and the highest trust its caller may write."""

    surface: str
    max_trust: str = TRUSTED


_CHANNEL: ContextVar[Channel | None] = ContextVar("omnimem_channel", default=None)
_ACTING: ContextVar[str | None] = ContextVar("omnimem_acting_as", default=None)
_slot: ContextVar[Slot | None] = ContextVar("omnimem_search_slot", default=None)
_held: ContextVar[_Holding | None] = ContextVar("omnimem_search_slot_held", default=None)


class _Holding:
    """The slot a :func:`cpu` block holds: given back for an :func:`off_cpu` block and taken again after it."""

    def __init__(self, slot: Slot) -> None:
        self.slot = slot
        self.held: AbstractContextManager[object] | None = None

    def take(self) -> None:
        entered = self.slot()
        entered.__enter__()
        self.held = entered

    def give(self) -> bool:
        """Give the slot back; False when none was held (an :func:`off_cpu` block inside another)."""
        held, self.held = self.held, None
        if held is None:
            return False
        held.__exit__(None, None, None)
        return True


@contextmanager
def writing_via(surface: str, max_trust: str = TRUSTED) -> Iterator[None]:
    """Within this block (this thread or task) writes arrive through ``surface``, capped at ``max_trust``."""
    check_surface(surface)
    token = _CHANNEL.set(Channel(surface, check_trust(max_trust, "max_trust")))
    try:
        yield
    finally:
        _CHANNEL.reset(token)


def current_channel() -> Channel | None:
    """The channel set by :func:`writing_via` here (None outside one: a direct Python call)."""
    return _CHANNEL.get()


@contextmanager
def acting_as(actor: str | None) -> Iterator[None]:
    """Within this block (this thread or task) the audit log names ``actor`` (a server's ``key:<name>``)."""
    token = _ACTING.set(actor)
    try:
        yield
    finally:
        _ACTING.reset(token)


def current_actor() -> str | None:
    """The actor set by :func:`acting_as` here (``None`` outside one): carried to another thread that acts for us."""
    return _ACTING.get()


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
    if slot is None or _held.get() is not None:
        yield
        return
    holding = _Holding(slot)
    holding.take()
    token = _held.set(holding)
    try:
        yield
    finally:
        _held.reset(token)
        holding.give()


@contextmanager
def off_cpu() -> Iterator[None]:
    """Give the slot of the :func:`cpu` block around back for this block (a wait for a model), take it again after.

    Outside a :func:`cpu` block, or inside another ``off_cpu`` block, nothing happens.
    """
    holding = _held.get()
    if holding is None or not holding.give():
        yield
        return
    try:
        yield
    finally:
        holding.take()


def check_surface(surface: object) -> str:
    if not isinstance(surface, str) or not (surface in SURFACES or (
            surface.startswith("integration:") and 12 < len(surface) <= 64)):
        raise InvalidInputError(f"surface must be one of {', '.join(SURFACES)} or integration:<name>, got {surface!r}")
    return surface

