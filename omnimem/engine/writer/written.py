"""What the writer hands on between storing a call's units and indexing and reporting them; a check's verdict."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from omnimem.engine.ingest.pipeline import Built
from omnimem.engine.ingest.prepare import AddResult, Pending
from omnimem.mau import MAU


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
