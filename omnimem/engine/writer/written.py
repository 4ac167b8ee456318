"""What the writer's one write sequence hands on between its steps (decide, build, write), and a check's verdict."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from omnimem.engine.ingest.pipeline import Built, Rows
from omnimem.results import AddResult
from omnimem.engine.ingest.prepare import Pending
from omnimem.mau import MAU


@dataclass(frozen=True, slots=True)
class Call:
    """One add call: its items, and how its write is logged."""

    items: Sequence[Pending]
    allow_forgotten: bool
    action: str
    reason: str | None
    actor: str | None  # the caller's ``acting_as`` (None outside one): the audit event names it


@dataclass(eq=False, slots=True)
class Decided:
    """One call's decided items: its results so far (``None`` where an item is stored), what it stores, its
    counters, and its rows when they were made beforehand (outside the write lock)."""

    call: Call
    results: list[AddResult | None]
    accepted: list[tuple[int, Pending, str]]
    counts: dict[str, float]
    rows: Rows | None = None


@dataclass(frozen=True, slots=True)
class Written:
    """One call's units as stored by :meth:`Writer.insert`, before they are indexed and reported."""

    accepted: list[tuple[int, Pending, str]]
    built: Built
    rows: list[tuple[int, MAU]]  # (row id, unit) of the units stored
    vectors: list[Any]  # theirs, in the same order
    raced: dict[str, MAU]  # units another process stored first: duplicates of its units
    holders: dict[str, str]  # content hash -> the unit holding it, for the raced
    jobs: bool  # jobs were enqueued: wake the workers
    propose: bool  # ask the model for supersession afterwards
    write_seq: int  # the store's change counter after this write


Verdict = tuple[AddResult, dict[str, float]]  # a check's answer instead of storing: the result and its counters
