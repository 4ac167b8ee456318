"""Listing a scope's units page by page (the console's table, ``GET /v1/units``).

Built on the store contracts every backend has (``ids_in_scope`` + ``get``):
the filters and the order are applied here in Python, which reads the whole
scope per call. That is fine for the scopes a console shows; a backend query
with ``ORDER BY ... LIMIT`` is the next step when scopes grow to millions.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from omnimem.contract import validate
from omnimem.engine.deps import Deps
from omnimem.engine.state import WriterState
from omnimem.errors import InvalidInputError
from omnimem.mau import MAU, Modality, Scope
from omnimem.timeparse import parse_time

MAX_PAGE = 1000


@dataclass(frozen=True, slots=True)
class UnitFilter:
    """Which units a listing shows: modality, speaker, event-time range, superseded ones or not."""

    modality: Modality | None = None
    speaker: str | None = None
    since: datetime | None = None  # inclusive, on event time
    until: datetime | None = None  # exclusive, on event time
    include_superseded: bool = False

    def admits(self, unit: MAU) -> bool:
        if self.modality is not None and unit.modality is not self.modality:
            return False
        if self.speaker is not None and unit.speaker != self.speaker:
            return False
        if not self.include_superseded and not unit.active:
            return False
        if self.since is not None or self.until is not None:
            if unit.event_time is None:
                return False
            if self.since is not None and unit.event_time < self.since:
                return False
            if self.until is not None and unit.event_time >= self.until:
                return False
        return True


def make_filter(deps: Deps, *, modality: object = None, speaker: object = None, since: object = None,
                until: object = None, include_superseded: object = False) -> UnitFilter:
    """Check a listing's filter arguments (typed errors for bad ones)."""
    kind: Modality | None = None
    if modality is not None:
        try:
            kind = Modality(modality)
        except ValueError:
            raise InvalidInputError(
                f"unknown modality {modality!r}; use one of {', '.join(m.value for m in Modality)}") from None
    if speaker is not None and not isinstance(speaker, str):
        raise InvalidInputError("speaker must be a string")
    times: list[datetime | None] = []
    for name, value in (("since", since), ("until", until)):
        if value is not None and not isinstance(value, str | datetime):
            raise InvalidInputError(f"{name} must be a time string or a datetime")
        times.append(parse_time(value, default_tz=deps.tz) if value is not None else None)
    return UnitFilter(kind, speaker, times[0], times[1], validate.flag(include_superseded, "include_superseded"))


def _order(row: tuple[int, MAU]) -> tuple[datetime, int]:
    """Event time (record time for units without one), then the order units were stored in.

    Row ids only grow, so among units of the same time (a session's turns
    share their session's date) they keep the order they were given in: the
    next turn after the one before, on every backend.
    """
    rid, unit = row
    return (unit.event_time or unit.record_time, rid)


Rows = list[tuple[int, MAU]]
SNAPSHOT_TRIES = 8  # reads of a scope that a write may interleave before the last one holds the write lock


def matching(deps: Deps, state: WriterState, scope: Scope, wanted: UnitFilter,
             exclusive: Callable[[Callable[[], Rows]], Rows]) -> list[MAU]:
    """Every unit of ``scope`` the filter admits, in listing order, as of one moment.

    The scope's ids and their rows are two reads; a write committed between them (a new version
    superseding an old one, say) would show neither version. Every write advances the store's change
    counter in its own transaction, so a read is kept only when the counter did not move across it;
    after a few tries the read is made through ``exclusive`` (the writer's: no write of this process
    in between).
    """
    with state.reading():
        for attempt in range(SNAPSHOT_TRIES):
            if attempt == SNAPSHOT_TRIES - 1:
                rows = exclusive(lambda: _rows(deps, scope))
                break
            before = deps.store.seq()
            rows = _rows(deps, scope)
            if deps.store.seq() == before:
                break
    return [unit for _, unit in sorted((r for r in rows if wanted.admits(r[1])), key=_order)]


def _rows(deps: Deps, scope: Scope) -> Rows:
    return list(deps.store.get_with_rids(deps.store.ids_in_scope(scope)))


def page(deps: Deps, state: WriterState, scope: Scope, wanted: UnitFilter, limit: object, offset: object,
         exclusive: Callable[[Callable[[], Rows]], Rows]) -> list[MAU]:
    """One page of :func:`matching`."""
    size = validate.whole(limit, "limit", maximum=MAX_PAGE)
    start = validate.whole(offset, "offset", minimum=0, maximum=1_000_000_000)
    return matching(deps, state, scope, wanted, exclusive)[start : start + size]
