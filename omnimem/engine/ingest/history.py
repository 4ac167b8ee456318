"""The audit history that travels with a dump: the source store's events about the units it exports.

``export`` writes each event about an exported unit; ``import`` appends
those whose units it now holds to this store's log, marked
``details["imported_from"] = {"seq", "time"}`` (the source's), so a memory
moved between backends keeps its history, and importing the same dump twice
adds nothing. The log stays append-only: imported events are new entries
that say where they came from. Events are checked with the units, before
anything is stored. An imported unit may not take an id another scope holds or
once held (:func:`new_units`), so a unit's history never crosses scopes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from omnimem.engine.ingest.dump import Checked
from omnimem.errors import InvalidInputError, MalformedDataError
from omnimem.mau import Scope
from omnimem.store.audit import AuditEvent
from omnimem.store.base import UnitStore
from omnimem.contract.validate import json_field

_TEXT_LIMIT = 2_000
ID_REFUSED = "this unit id cannot be imported here; give the unit another id"


@dataclass(frozen=True, slots=True)
class PastEvent:
    event: AuditEvent
    origin: str  # "<time>#<seq>" of the source store
    same_as: str  # "<time>|<action>|<ids>": an event this store logged itself (a backup restored into its source)


def check_events(records: Iterable[Mapping[str, Any]]) -> list[PastEvent]:
    """Every ``event`` record of a dump, validated (a bad one is a MalformedDataError naming it)."""
    out: list[PastEvent] = []
    for n, record in enumerate(records, start=1):
        if not isinstance(record, Mapping) or record.get("kind") != "event":
            continue
        ids, details, seq, time = record.get("unit_ids"), record.get("details", {}), record.get("seq"), record.get("time")
        texts = [record.get(k) for k in ("action", "actor")]
        optional = [record.get(k) for k in ("reason", "user_id", "agent_id", "session_id")]
        if (not isinstance(ids, list) or not ids or not all(isinstance(i, str) and 0 < len(i) <= 200 for i in ids)
                or not all(isinstance(t, str) and 0 < len(t) <= 200 for t in texts)
                or not all(v is None or (isinstance(v, str) and len(v) <= _TEXT_LIMIT) for v in optional)
                or not isinstance(details, Mapping) or not isinstance(seq, int) or isinstance(seq, bool)
                or not isinstance(time, str) or not _is_time(time)
                or any("\x00" in v for v in (*ids, *texts, *optional) if isinstance(v, str))):  # as validate.no_nul
            raise MalformedDataError(f"record {n}: not a valid audit event (kind, action, actor, unit_ids, seq, time)")
        try:  # the same size and depth bound as metadata, so the log always reads back
            details = json_field(dict(details), "details")
        except InvalidInputError as exc:
            raise MalformedDataError(f"record {n}: {exc}") from None
        scope = Scope(record.get("user_id"), record.get("agent_id"), record.get("session_id"))
        came = details.get("imported_from")  # moved before: it keeps naming the store it was first logged in
        first = came if isinstance(came, Mapping) else {"seq": seq, "time": time}
        origin = f"{first.get('time')}#{first.get('seq')}"
        same_as = f"{time}|{texts[0]}|{','.join(ids)}"
        out.append(PastEvent(AuditEvent(str(texts[0]), str(texts[1]), tuple(ids), scope, record.get("reason"),
                                        {**details, "imported_from": dict(first)}), origin, same_as))
    return out


def _is_time(text: str) -> bool:
    try:
        datetime.fromisoformat(text)
    except ValueError:
        return False
    return True


def restore(store: UnitStore, events: Sequence[PastEvent], log: Callable[[AuditEvent], None]) -> int:
    """Append (``log``: the engine's writer) the events whose units this store holds and that were not
    imported before; returns how many."""
    if not events:
        return 0
    ids = sorted({i for e in events for i in e.event.unit_ids})
    owners = {u.id: u.scope for u in store.get(ids)}
    present = set(owners)
    seen: set[str] = set()
    for unit_id in ids:
        if unit_id in present:
            for record in store.events(unit_id=unit_id):
                came = record.details.get("imported_from")
                if isinstance(came, Mapping):
                    seen.add(f"{came.get('time')}#{came.get('seq')}")
                seen.add(f"{record.time.isoformat()}|{record.action}|{','.join(record.unit_ids)}")
    added = 0
    for past in sorted(events, key=lambda p: p.origin):  # in the order they were first logged
        if past.origin in seen or past.same_as in seen or not all(
                i in present and _owned(past.event.scope, owners[i]) for i in past.event.unit_ids):
            continue  # already here, or about units this store does not hold (skipped, forgotten) or not the event's
        log(past.event)
        seen.add(past.origin)
        added += 1
    return added


def new_units(store: UnitStore, checked: Sequence[Checked]) -> list[Checked]:
    """The checked units whose ids this store does not hold yet (those it holds in the same scope are
    skipped); a MalformedDataError for the first whose id is not the importer's to use.

    An id is refused when a unit of another scope holds it, or when it ever named a unit of another user
    or agent here (a tombstone, an audit event): taking it over would hand that scope's history to the
    importer. Every refusal reads the same, so an import cannot tell a live id from a deleted one, or
    either from any other refused id (an existence oracle otherwise).
    """
    ids = [c.item.unit_id or "" for c in checked]
    present = {u.id: u.scope for u in store.get(ids)}
    pasts = store.past_owners([i for i in ids if i not in present])
    todo: list[Checked] = []
    for c in checked:
        uid, scope = c.item.unit_id or "", c.item.scope
        if uid in present:
            if present[uid] != scope:
                raise MalformedDataError(f"{c.where}: {ID_REFUSED}")
            continue
        if not all(_owned(Scope(user, agent), scope) for user, agent in pasts.get(uid, ())):
            raise MalformedDataError(f"{c.where}: {ID_REFUSED}")
        todo.append(c)
    return todo


def _owned(event: Scope, unit: Scope) -> bool:
    """An event that names a user (or agent) is restored only about that user's (agent's) units, so an
    event in one user's log never names another user's unit."""
    return (event.user_id is None or event.user_id == unit.user_id) and (
        event.agent_id is None or event.agent_id == unit.agent_id)
