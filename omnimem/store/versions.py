"""Supersession links between versions of a memory, kept consistent when units go.

A unit may replace (supersede) only units of its own user and agent. When a
replacing unit is deleted or forgotten, what it replaced is replaced by its
surviving successor, or becomes current again; either way the change is
logged against the older unit.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping, Sequence
from datetime import datetime

from omnimem.errors import NotFoundError
from omnimem.mau import Scope
from omnimem.store.audit import AuditEvent, log_event
from omnimem.store.sqlite.unit_rows import chunks


def mark_superseded(conn: sqlite3.Connection, old_ids: Sequence[str], new_id: str, when: datetime) -> None:
    """Only units of the same user and agent as ``new_id`` can be superseded by it."""
    owner = conn.execute("SELECT user_id, agent_id FROM units WHERE id = ?", (new_id,)).fetchone()
    for old in old_ids:
        cur = conn.execute(
            "UPDATE units SET superseded_by = ?, superseded_at = ?, superseded_ts = ? "
            "WHERE id = ? AND superseded_by IS NULL AND user_id IS ? AND agent_id IS ?",
            (new_id, when.isoformat(), when.timestamp(), old, *(owner or (None, None))),
        )
        if cur.rowcount != 1 or owner is None:
            raise NotFoundError(f"no current unit {old!r} of the same user and agent to supersede")


def reconnect(conn: sqlite3.Connection, successor: Mapping[str, str | None], actor: str) -> None:
    """Units replaced by a deleted unit: now replaced by its surviving successor, or current again."""
    for chunk in chunks(list(successor), 500):
        marks = ",".join("?" * len(chunk))
        rows = conn.execute(
            "SELECT id, user_id, agent_id, session_id, superseded_by FROM units "
            f"WHERE superseded_by IN ({marks})", chunk
        ).fetchall()
        for uid, user_id, agent_id, session_id, deleted in rows:
            heir = heir_of(deleted, successor)
            if heir is None:
                conn.execute("UPDATE units SET superseded_by = NULL, superseded_at = NULL, superseded_ts = NULL "
                             "WHERE id = ?", (uid,))
            else:
                conn.execute("UPDATE units SET superseded_by = ? WHERE id = ?", (heir, uid))
            log_event(conn, reconnect_event(uid, Scope(user_id, agent_id, session_id), deleted, heir, actor))


def heir_of(deleted: str, successor: Mapping[str, str | None]) -> str | None:
    """The unit that replaces ``deleted`` once it and the other deleted units (``successor``: deleted id ->
    what replaced it) are gone: the first survivor down the chain, or None (none survives, or a cycle)."""
    heir: str | None = deleted
    seen: set[str] = set()
    while heir is not None and heir in successor and heir not in seen:
        seen.add(heir)
        heir = successor[heir]
    return None if heir in seen else heir


def reconnect_event(uid: str, scope: Scope, deleted: str, heir: str | None, actor: str) -> AuditEvent:
    """The audit event of a unit whose successor ``deleted`` went: current again, or replaced by ``heir``."""
    if heir is None:
        return AuditEvent("revive", actor, (uid,), scope, f"its successor {deleted} was deleted",
                          {"deleted_successor": deleted})
    return AuditEvent("supersede", actor, (heir, uid), scope, f"its successor {deleted} was deleted; {heir} replaces it",
                      {"deleted_successor": deleted})

