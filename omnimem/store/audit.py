"""The append-only audit log and the tombstones of forgotten content.

Every mutation writes one event inside its own transaction, so the log and
the data never disagree. Events carry ids, hashes, scope and a reason, never
content: a forgotten unit leaves a truthful record and no data. SQLite
triggers refuse UPDATE and DELETE on the log.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from omnimem.mau import Scope
from omnimem.results import AuditRecord

AUDIT_SCHEMA = [
    """CREATE TABLE IF NOT EXISTS audit_log (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        time TEXT NOT NULL,
        actor TEXT NOT NULL,
        action TEXT NOT NULL,
        unit_ids TEXT NOT NULL,
        scope TEXT NOT NULL,
        reason TEXT,
        details TEXT NOT NULL DEFAULT '{}'
    )""",
    """CREATE TRIGGER IF NOT EXISTS audit_log_no_update BEFORE UPDATE ON audit_log
       BEGIN SELECT RAISE(ABORT, 'the audit log is append-only'); END""",
    """CREATE TRIGGER IF NOT EXISTS audit_log_no_delete BEFORE DELETE ON audit_log
       BEGIN SELECT RAISE(ABORT, 'the audit log is append-only'); END""",
    """CREATE TABLE IF NOT EXISTS audit_units (
        seq INTEGER NOT NULL REFERENCES audit_log (seq),
        unit_id TEXT NOT NULL
    )""",
    "CREATE INDEX IF NOT EXISTS audit_units_unit ON audit_units (unit_id)",
    """CREATE TRIGGER IF NOT EXISTS audit_units_no_update BEFORE UPDATE ON audit_units
       BEGIN SELECT RAISE(ABORT, 'the audit log is append-only'); END""",
    """CREATE TRIGGER IF NOT EXISTS audit_units_no_delete BEFORE DELETE ON audit_units
       BEGIN SELECT RAISE(ABORT, 'the audit log is append-only'); END""",
    """CREATE TABLE IF NOT EXISTS tombstones (
        content_hash TEXT PRIMARY KEY,
        unit_id TEXT NOT NULL,
        forgotten_at TEXT NOT NULL
    )""",
]


@dataclass(frozen=True, slots=True)
class AuditEvent:
    """One mutation: what happened to which units, by whom, and why."""

    action: str  # add, update, supersede, delete, forget, import, reembed
    actor: str
    unit_ids: tuple[str, ...]
    scope: Scope = field(default_factory=Scope)
    reason: str | None = None
    details: dict[str, Any] = field(default_factory=dict)


def log_event(conn: sqlite3.Connection, event: AuditEvent) -> int:
    """Append ``event`` inside the caller's transaction; returns its sequence number."""
    cur = conn.execute(
        "INSERT INTO audit_log(time, actor, action, unit_ids, scope, reason, details) VALUES (?,?,?,?,?,?,?)",
        (
            datetime.now(timezone.utc).isoformat(), event.actor, event.action, json.dumps(list(event.unit_ids)),
            json.dumps(event.scope.as_dict()), event.reason, json.dumps(event.details),
        ),
    )
    seq = int(cur.lastrowid or 0)
    conn.executemany("INSERT INTO audit_units(seq, unit_id) VALUES (?, ?)", [(seq, u) for u in event.unit_ids])
    return seq


def read_events(
    conn: sqlite3.Connection, *, unit_id: str | None = None, scope: Scope | None = None, limit: int | None = None
) -> list[AuditRecord]:
    """Events in order, for one unit or filtered by scope (None = any)."""
    sql = "SELECT seq, time, actor, action, unit_ids, scope, reason, details FROM audit_log"
    args: list[Any] = []
    if unit_id is not None:
        sql += " WHERE seq IN (SELECT seq FROM audit_units WHERE unit_id = ?)"
        args.append(unit_id)
    sql += " ORDER BY seq"
    records = [_record(row) for row in conn.execute(sql, args)]
    if scope is not None and not scope.is_empty():
        wanted = scope.as_dict()
        records = [r for r in records if all(v is None or r.scope.as_dict()[k] == v for k, v in wanted.items())]
    return records[-limit:] if limit else records


def _record(row: Sequence[Any]) -> AuditRecord:
    seq, time, actor, action, unit_ids, scope, reason, details = row
    return AuditRecord(
        int(seq), datetime.fromisoformat(time), actor, action, tuple(json.loads(unit_ids)),
        Scope(**json.loads(scope)), reason, json.loads(details),
    )
