"""Reading, correcting and removing units by id, bound to a scope; forgetting by selection.

Calls by id (``get``, ``update``, ``delete``, ``history``) take the same
optional scope as ``search``; a unit outside it is reported as not found, so
a caller bound to one user (a server's API key) cannot learn that another
user's unit exists. Supersession links only units of the same user and agent.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from omnimem.contract import validate
from omnimem.engine.deps import Deps
from omnimem.engine.state import WriterState
from omnimem.engine.writer import Changes, Writer
from omnimem.errors import InvalidInputError, NotFoundError
from omnimem.mau import MAU, Scope
from omnimem.store import tombstones
from omnimem.store.audit import AuditEvent
from omnimem.results import AuditRecord
from omnimem.timeparse import parse_time


def check_id(unit_id: object) -> str:
    uid = validate.unit_id(unit_id)
    if not uid.strip():
        raise InvalidInputError("unit_id must be a non-empty string")
    return uid


def _missing(unit_id: str) -> NotFoundError:
    return NotFoundError(f"no unit with id {unit_id!r}")


def scoped_unit(deps: Deps, state: WriterState, unit_id: object, scope: Scope) -> MAU:
    """The unit with this id if it lies in ``scope``; else NotFoundError (never "exists elsewhere")."""
    uid = check_id(unit_id)
    with state.reading():
        found = deps.store.get([uid])
    if not found or not scope.contains(found[0].scope):
        raise _missing(uid)
    return found[0]


def check_supersedable(deps: Deps, state: WriterState, ids: Sequence[str], owner: Scope) -> None:
    """Units a new unit of ``owner`` may replace: current ones of the same user and agent."""
    if isinstance(ids, str) or not all(isinstance(i, str) for i in ids):
        raise InvalidInputError("supersedes must be a list of unit ids")
    with state.reading():
        found = {u.id: u for u in deps.store.get(list(ids))}
    for uid in ids:
        unit = found.get(uid)
        if unit is None or (unit.user_id, unit.agent_id) != (owner.user_id, owner.agent_id):
            raise _missing(uid)  # another user's unit is "not found": its existence must not leak
        if unit.superseded_by is not None:
            raise InvalidInputError(f"unit {uid} is already superseded by {unit.superseded_by}; use that one")


def versions(deps: Deps, state: WriterState, unit: MAU) -> list[str]:
    """Every version of a memory: the units it replaced and the ones that replaced it, transitively."""
    owner = (unit.user_id, unit.agent_id)
    seen = {unit.id}
    todo = [unit.id]
    while todo:
        with state.reading():
            linked = deps.store.predecessors(todo) + [u.superseded_by for u in deps.store.get(todo) if u.superseded_by]
            units = [u for u in deps.store.get(linked) if (u.user_id, u.agent_id) == owner and u.id not in seen]
        todo = [u.id for u in units]
        seen.update(todo)
    return sorted(seen)


def _enriched(old: MAU, new: MAU) -> bool:
    """Whether ``new`` is the enrichment of ``old`` (see :mod:`omnimem.engine.enrich`), not a user's correction."""
    return new.metadata.get("enriched_from") == old.id or (
        old.metadata.get("restated") == "offline" and new.metadata.get("restated") is True
        and old.superseded_by == new.id)


def enrichment_family(deps: Deps, unit: MAU) -> list[str]:
    """A unit with the versions enrichment made of it and the ones it was made from: to the user they are
    one memory, so deleting any of them deletes all (a delete by the id ``add`` returned leaves nothing)."""
    seen = {unit.id: unit}
    todo = [unit]
    while todo:
        current = todo.pop()
        linked = [i for i in (current.metadata.get("enriched_from"), current.superseded_by) if i]
        for other in deps.store.get([i for i in linked + deps.store.predecessors([current.id]) if i not in seen]):
            if _enriched(other, current) or _enriched(current, other):
                seen[other.id] = other
                todo.append(other)
    return sorted(seen)


def delete(deps: Deps, writer: Writer, unit_id: object, scope: Scope, reason: str | None, chain: bool) -> None:
    """Remove a unit with its versions (``chain``) or its enrichment family, chosen with no write in between."""
    if not isinstance(chain, bool):
        raise InvalidInputError("chain must be True or False")

    def change(changes: Changes) -> None:
        unit = scoped_unit(deps, writer.state, unit_id, scope)
        ids = versions(deps, writer.state, unit) if chain else enrichment_family(deps, unit)
        changes.remove(ids, AuditEvent("delete", deps.actor, (unit.id,), unit.scope, reason, {"chain": chain}))

    writer.change(change)


def history(deps: Deps, state: WriterState, unit_id: object, scope: Scope) -> list[AuditRecord]:
    uid = check_id(unit_id)
    with state.reading():
        if not scope.is_empty():
            found = deps.store.get([uid])
            owner = found[0].scope if found else deps.store.tombstone_owner(uid)
            if owner is None or not scope.contains(owner):
                raise _missing(uid)
            return _within(deps, deps.store.events(unit_id=uid), Scope(scope.user_id, scope.agent_id))
        return deps.store.events(unit_id=uid)


def _within(deps: Deps, events: list[AuditRecord], owner: Scope) -> list[AuditRecord]:
    """The events with only the unit ids ``owner``'s (live, or deleted while the tombstone lasts): one event
    can name units of many users (a forget by session for all users), and a scoped caller sees only its own."""
    ids = list(dict.fromkeys(i for e in events for i in e.unit_ids))
    owners = {u.id: u.scope for u in deps.store.get(ids)}
    for uid in ids:
        if uid not in owners:
            gone = deps.store.tombstone_owner(uid)
            if gone is not None:
                owners[uid] = gone
    mine = {uid for uid, scope in owners.items() if owner.contains(scope)}
    return [e if mine.issuperset(e.unit_ids) else replace(e, unit_ids=tuple(i for i in e.unit_ids if i in mine))
            for e in events]


@dataclass(frozen=True, slots=True)
class ForgetPlan:
    """A checked forget selection: what to pick, and what to log."""

    scope: Scope
    start: datetime | None
    end: datetime | None
    ids: list[str] | None
    whole: Scope | None  # a whole user/agent (or the store) goes: its tombstone key goes too
    details: dict[str, object]
    reason: str | None


def plan_forget(
    deps: Deps, scope: Scope, *, since: object, until: object, unit_ids: object, everything: object,
    all_users: object, reason: object,
) -> ForgetPlan:
    """Check a forget's arguments (see :meth:`Memory.forget`); nothing is read or removed yet."""
    ids = _check_forget_args(unit_ids, everything, all_users, reason, since, until)
    start = parse_time(since, default_tz=deps.tz) if since is not None else None  # type: ignore[arg-type]
    end = parse_time(until, default_tz=deps.tz) if until is not None else None  # type: ignore[arg-type]
    owned = scope.user_id is not None or scope.agent_id is not None
    if everything and (not scope.is_empty() or start or end or ids is not None or all_users):
        raise InvalidInputError("all=True wipes the whole store and takes no other criteria")
    if not everything and scope.is_empty() and start is None and end is None and ids is None:
        raise InvalidInputError("forget needs a scope, a time range or unit ids; it never means 'everything' "
                                "(pass all=True to wipe the store)")
    if not owned and ids is None and not everything and not all_users:
        raise InvalidInputError("a forget by session or time range must name a user_id or agent_id; "
                                "pass all_users=True to forget it for every user")
    timed = start is not None or end is not None
    whole = Scope() if everything else (
        Scope(scope.user_id, scope.agent_id) if tombstones.whole_scope(scope, timed=timed, by_ids=ids is not None)
        else None)
    details: dict[str, object] = {
        "since": start.isoformat() if start else None, "until": end.isoformat() if end else None,
        "all": bool(everything), "all_users": bool(all_users), "by_ids": ids is not None}
    return ForgetPlan(scope, start, end, ids, whole, details, reason if isinstance(reason, str) else None)


def forget_selection(deps: Deps, plan: ForgetPlan) -> list[str]:
    """The ids a plan selects."""
    chosen = deps.store.ids_in_scope(plan.scope)
    if plan.start is not None or plan.end is not None:  # only a time range needs the units themselves
        chosen = [u.id for u in deps.store.get(chosen) if _in_range(u, plan.start, plan.end)]
    if plan.ids is not None:
        wanted = set(plan.ids)
        chosen = [uid for uid in chosen if uid in wanted]
    return chosen


def forget(deps: Deps, writer: Writer, scope: Scope, **selection: Any) -> int:
    """Select and remove units (see :meth:`Memory.forget`), with no write between the selection and the removal."""
    plan = plan_forget(deps, scope, **selection)

    def change(changes: Changes) -> int:
        chosen = forget_selection(deps, plan)
        changes.remove(chosen, AuditEvent("forget", deps.actor, (), plan.scope, plan.reason, dict(plan.details)),
                       forgotten=plan.whole)
        return len(chosen)

    return writer.change(change)


def preview_forget(deps: Deps, state: WriterState, scope: Scope, **selection: Any) -> list[MAU]:
    """The units :func:`forget` would remove with these arguments; removes nothing."""
    plan = plan_forget(deps, scope, **selection)
    with state.reading():
        return deps.store.get(forget_selection(deps, plan))


def _check_forget_args(
    unit_ids: object, everything: object, all_users: object, reason: object, since: object, until: object
) -> list[str] | None:
    if not isinstance(everything, bool) or not isinstance(all_users, bool):
        raise InvalidInputError("all and all_users must be True or False")
    if reason is not None and not isinstance(reason, str):
        raise InvalidInputError("reason must be a string")
    for name, value in (("since", since), ("until", until)):
        if value is not None and not isinstance(value, str | datetime):
            raise InvalidInputError(f"{name} must be a time string or a datetime")
    if unit_ids is None:
        return None
    if not isinstance(unit_ids, list | tuple) or not all(isinstance(u, str) for u in unit_ids):
        raise InvalidInputError("unit_ids must be a list of unit id strings (not one string)")
    return list(unit_ids)


def _in_range(unit: MAU, start: datetime | None, end: datetime | None) -> bool:
    if unit.event_time is None:
        return False
    return (start is None or unit.event_time >= start) and (end is None or unit.event_time < end)
