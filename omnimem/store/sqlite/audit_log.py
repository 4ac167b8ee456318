"""The audit-log half of the ``UnitStore`` contract on SQLite: events, tombstones and past owners."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from omnimem.mau import Scope
from omnimem.store import tombstones
from omnimem.store.audit import AuditEvent, log_event, read_events
from omnimem.results import AuditRecord


class SQLiteAuditLog:
    """What the store remembers about changes (the log) and deleted units (tombstones), on its connection."""

    _conn: sqlite3.Connection
    _lock: threading.RLock

    if TYPE_CHECKING:  # provided by SQLiteStore
        def _tx(self) -> Any: ...  # the store's write transaction (BEGIN IMMEDIATE)
        def _bump(self) -> None: ...  # moves the change counter

    def set_trust(self, ids: Sequence[str], trust: str, event: AuditEvent) -> int:
        """Give these units ``trust``, logging ``event``, in one transaction; how many units changed."""
        with self._lock, self._tx() as conn:
            changed = sum(int(conn.execute("UPDATE units SET trust = ? WHERE id = ? AND trust != ?",
                                           (trust, uid, trust)).rowcount) for uid in ids)
            log_event(conn, event)
            self._bump()
        return changed

    def log(self, event: AuditEvent) -> None:
        """Record an event that changes no unit row (e.g. a re-embed)."""
        with self._lock, self._tx() as conn:
            log_event(conn, event)

    def events(self, *, unit_id: str | None = None, scope: Scope | None = None,
               limit: int | None = None) -> list[AuditRecord]:
        with self._lock:
            return read_events(self._conn, unit_id=unit_id, scope=scope, limit=limit)

    def tombstoned(self, items: Sequence[tuple[Scope, str]]) -> dict[str, str]:
        """Which (scope, content hash) pairs were deleted: hash -> the deleted unit's id (keyed tombstones)."""
        with self._lock:
            return tombstones.find(self._conn, items)

    def tombstone_owner(self, unit_id: str) -> Scope | None:
        """The scope a deleted unit belonged to, while its tombstone lasts."""
        with self._lock:
            return tombstones.owner(self._conn, unit_id)

    def past_owners(self, unit_ids: Sequence[str]) -> dict[str, set[tuple[str | None, str | None]]]:
        """Who each id's tombstones and audit events name (an import refuses ids another scope held)."""
        with self._lock:
            return tombstones.past_owners(self._conn, unit_ids)

    def forgotten_since(self, scope: Scope) -> datetime | None:
        """When this user/agent pair was last forgotten as a whole (None: never)."""
        with self._lock:
            return tombstones.forgotten_since(self._conn, scope)
