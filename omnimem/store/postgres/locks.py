"""The one lock order of every PostgreSQL mutation, and the retries of a transaction that loses a race.

Any number of processes write one database. Two transactions can only wait on each
other in a cycle (a deadlock) if they take the same locks in different orders, so
every mutation of :class:`~omnimem.store.postgres.store.PostgresStore` takes what it
needs in this order, each step in one statement, and never goes back to an earlier step:

1. **Advisory locks** (:func:`lock_scopes`), sorted: the store-wide writer lock
   (shared; exclusive for a write that rewrites everything, or a delete spanning more
   than :data:`MANY` users), then per user (``tenant``; shared, exclusive for a delete
   spanning more than :data:`MANY` of its scopes), then per exact scope (user, agent,
   session; exclusive). An add holds its units' scopes, so a second writer of the same
   scope waits: the duplicate check (content hashes include the exact scope) and the
   session's ``prev_id`` chain and BM25 context are read and written by one writer at
   a time. A delete holds the scopes of the units it removes, so an add never links to,
   or takes BM25 context from, a unit being deleted.
2. **Existing unit rows**, ``FOR UPDATE`` in row-id order (:func:`lock_units`): the
   units a write deletes, supersedes or re-indexes, and those whose ``prev_id`` or
   ``superseded_by`` it rewrites.
3. **Blobs**, by reference.
4. **Document frequencies** (``term_df``) in term order: the trigger on ``terms`` locks
   the rows of one statement sorted; a transaction with more than one postings
   statement locks every term it will touch first (:func:`lock_terms`).
5. Graph rows, the audit log and jobs (appends and upserts of the transaction's own units).
6. **The counters row**, last (every write moves it, so it is held for the shortest time).

Deadlocks and serialisation failures that remain possible (graph rows shared by two
writers of one user, an index build) are retried: the whole transaction again, up to
:data:`ATTEMPTS` times with exponential backoff and full jitter (:func:`backoff`); then
:class:`~omnimem.errors.WriteConflictError` says what happened.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterable, Sequence
from typing import Any

from omnimem.mau import Scope
from omnimem.store.postgres.governance_sql import tenant_of

MANY = 32  # more scopes of one user (or more users) than this: one coarser lock instead of many fine ones
ATTEMPTS = 8  # tries of one transaction before WriteConflictError
BASE_DELAY = 0.01  # seconds; doubles per retry ...
MAX_DELAY = 0.5  # ... up to this

RETRYABLE = ("40001", "40P01")  # serialization_failure, deadlock_detected
_WRITERS = "omnimem:writers"
_random = random.Random()


def backoff(attempt: int) -> float:
    """Seconds to wait before retry ``attempt`` (0-based): full jitter under a doubling cap."""
    return _random.uniform(0.0, min(MAX_DELAY, BASE_DELAY * 2 ** attempt))


def scope_key(scope: Scope) -> str:
    return "omnimem:scope:" + json.dumps([scope.user_id, scope.agent_id, scope.session_id])


def lock_plan(scopes: Iterable[Scope]) -> list[tuple[str, bool]]:
    """(lock name, shared) in the one order: writers, then per tenant its own lock and its scopes' locks."""
    by_tenant: dict[str, set[Scope]] = {}
    for scope in scopes:
        by_tenant.setdefault(tenant_of(scope), set()).add(scope)
    if len(by_tenant) > MANY:
        return [(_WRITERS, False)]
    plan = [(_WRITERS, True)]
    for tenant in sorted(by_tenant):
        mine = by_tenant[tenant]
        if len(mine) > MANY:
            plan.append(("omnimem:tenant:" + tenant, False))
            continue
        plan.append(("omnimem:tenant:" + tenant, True))
        plan.extend((key, False) for key in sorted(scope_key(s) for s in mine))
    return plan


def lock_scopes(conn: Any, scopes: Iterable[Scope]) -> None:
    """Step 1: the advisory locks of a write to ``scopes`` (held to the end of the transaction)."""
    plan = lock_plan(scopes)
    conn.execute("SELECT CASE WHEN shared THEN pg_advisory_xact_lock_shared(hashtextextended(name, 0)) "
                 "ELSE pg_advisory_xact_lock(hashtextextended(name, 0)) END "
                 "FROM unnest(%s::text[], %s::boolean[]) WITH ORDINALITY AS t(name, shared, n) ORDER BY n",
                 ([name for name, _ in plan], [shared for _, shared in plan]))


def lock_everything(conn: Any) -> None:
    """Step 1 for a write that rewrites every unit (re-embedding, rebuilding the postings): no other writer runs."""
    conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (_WRITERS,))


def lock_units(conn: Any, ids: Sequence[str] = (), *, rids: Sequence[int] = (), linked: bool = False) -> None:
    """Step 2: these units' rows (by id or row id), and with ``linked`` the units whose ``prev_id`` or
    ``superseded_by`` names one of ``ids``, in row-id order."""
    where = "id = ANY(%(ids)s) OR rid = ANY(%(rids)s)"
    if linked:
        where += " OR prev_id = ANY(%(ids)s) OR superseded_by = ANY(%(ids)s)"
    conn.execute(f"SELECT rid FROM units WHERE {where} ORDER BY rid FOR UPDATE",
                 {"ids": list(ids), "rids": [int(r) for r in rids]})


def lock_terms(conn: Any, terms: Iterable[str]) -> list[str]:
    """Step 4 up front: lock (creating at 0) the ``term_df`` rows of every term the transaction will write.

    Returns the terms; :func:`drop_unused_terms` removes those still at 0 when the postings are written.
    """
    wanted = sorted(set(terms))
    if wanted:
        conn.execute("INSERT INTO term_df (term, df) SELECT t, 0 FROM unnest(%s::text[]) AS t ORDER BY t "
                     "ON CONFLICT (term) DO UPDATE SET df = term_df.df", (wanted,))
    return wanted


def drop_unused_terms(conn: Any, terms: Sequence[str]) -> None:
    if terms:
        conn.execute("DELETE FROM term_df WHERE df <= 0 AND term = ANY(%s)", (list(terms),))


def retryable(exc: BaseException) -> bool:
    return getattr(exc, "sqlstate", None) in RETRYABLE
