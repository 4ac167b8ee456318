"""The audit log, keyed tombstones and supersession links in PostgreSQL (inside the caller's transaction).

The same rules as the SQLite store's :mod:`omnimem.store.audit`,
:mod:`omnimem.store.tombstones` and :mod:`omnimem.store.versions`, in
PostgreSQL's dialect; the HMAC marks are computed by the same functions, so a
tombstone means the same on both backends.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timezone
from typing import Any

from omnimem.errors import NotFoundError
from omnimem.mau import Scope
from omnimem.store.audit import AuditEvent
from omnimem.results import AuditRecord
from omnimem.store.tombstones import mark
from omnimem.store.versions import heir_of, reconnect_event

_NONE = ""  # scope ids are never empty strings, so "" stands for "none" (as in SQLite's scope_keys)


def tenant_of(scope: Scope) -> str:
    """The distribution and row-level-security key of a scope's rows: its user (``''`` when none)."""
    return scope.user_id or _NONE


def _now() -> str:
    return datetime.now(timezone.utc).isoformat()


# -- audit log -------------------------------------------------------------------
def log_event(conn: Any, event: AuditEvent) -> int:
    """Append ``event``; returns its sequence number."""
    tenant = tenant_of(event.scope)
    seq = int(conn.execute(
        "INSERT INTO audit_log(tenant, time, actor, action, unit_ids, scope, reason, details) "
        "VALUES (%s,%s,%s,%s,%s,%s,%s,%s) RETURNING seq",
        (tenant, _now(), event.actor, event.action, json.dumps(list(event.unit_ids)),
         json.dumps(event.scope.as_dict()), event.reason, json.dumps(event.details)),
    ).fetchone()[0])
    if event.unit_ids:
        conn.execute("INSERT INTO audit_units(tenant, seq, unit_id) SELECT %s, %s, unnest(%s::text[])",
                     (tenant, seq, list(event.unit_ids)))
    return seq


def read_events(conn: Any, *, unit_id: str | None, scope: Scope | None, limit: int | None) -> list[AuditRecord]:
    sql = "SELECT seq, time, actor, action, unit_ids, scope, reason, details FROM audit_log"
    args: list[Any] = []
    if unit_id is not None:
        sql += " WHERE seq IN (SELECT seq FROM audit_units WHERE unit_id = %s)"
        args.append(unit_id)
    elif scope is not None and scope.user_id is not None:
        sql += " WHERE tenant = %s"
        args.append(scope.user_id)
    sql += " ORDER BY seq"
    records = [AuditRecord(int(seq), datetime.fromisoformat(time), actor, action, tuple(json.loads(ids)),
                           Scope(**json.loads(sc)), reason, json.loads(details))
               for seq, time, actor, action, ids, sc, reason, details in conn.execute(sql, args)]
    if scope is not None and not scope.is_empty():
        wanted = scope.as_dict()
        records = [r for r in records if all(v is None or r.scope.as_dict()[k] == v for k, v in wanted.items())]
    return records[-limit:] if limit else records


# -- keyed tombstones ------------------------------------------------------------
def scope_key(conn: Any, user_id: str | None, agent_id: str | None, *, create: bool) -> bytes | None:
    pair = (user_id or _NONE, agent_id or _NONE)
    row = conn.execute("SELECT key FROM scope_keys WHERE tenant = %s AND user_id = %s AND agent_id = %s",
                       (pair[0], *pair)).fetchone()
    if row is not None:
        return bytes(row[0])
    if not create:
        return None
    key = secrets.token_bytes(32)
    conn.execute("INSERT INTO scope_keys(tenant, user_id, agent_id, key) VALUES (%s, %s, %s, %s) "
                 "ON CONFLICT DO NOTHING", (pair[0], *pair, key))
    again = conn.execute("SELECT key FROM scope_keys WHERE tenant = %s AND user_id = %s AND agent_id = %s",
                         (pair[0], *pair)).fetchone()  # another writer may have made it first
    return bytes(again[0])


def bury(conn: Any, unit_id: str, content_hash: str, scope: Scope) -> None:
    key = scope_key(conn, scope.user_id, scope.agent_id, create=True)
    assert key is not None
    conn.execute(
        "INSERT INTO tombstones_keyed(tenant, mark, unit_id, user_id, agent_id, session_id, forgotten_at) "
        "VALUES (%s,%s,%s,%s,%s,%s,%s) ON CONFLICT (tenant, mark) DO UPDATE SET unit_id = excluded.unit_id, "
        "session_id = excluded.session_id, forgotten_at = excluded.forgotten_at",
        (tenant_of(scope), mark(key, content_hash), unit_id, scope.user_id, scope.agent_id, scope.session_id, _now()),
    )


def find_tombstones(conn: Any, items: Iterable[tuple[Scope, str]]) -> dict[str, str]:
    keys: dict[tuple[str | None, str | None], bytes | None] = {}
    wanted: dict[str, str] = {}
    for scope, chash in items:
        pair = (scope.user_id, scope.agent_id)
        if pair not in keys:
            keys[pair] = scope_key(conn, *pair, create=False)
        key = keys[pair]
        if key is not None:
            wanted[mark(key, chash)] = chash
    if not wanted:
        return {}
    rows = conn.execute("SELECT mark, unit_id FROM tombstones_keyed WHERE mark = ANY(%s)", (list(wanted),))
    return {wanted[found]: str(unit_id) for found, unit_id in rows}


def tombstone_owner(conn: Any, unit_id: str) -> Scope | None:
    row = conn.execute("SELECT user_id, agent_id, session_id FROM tombstones_keyed WHERE unit_id = %s LIMIT 1",
                       (unit_id,)).fetchone()
    return Scope(*row) if row else None


def forget_scope(conn: Any, scope: Scope) -> None:
    """A whole user and/or agent was forgotten: its keys and tombstones go; who and when stays."""
    parts, args = [], []
    for col, value in (("user_id", scope.user_id), ("agent_id", scope.agent_id)):
        if value is not None:
            parts.append(f"{col} = %s")
            args.append(value)
    where = " AND ".join(parts) or "TRUE"
    conn.execute(f"DELETE FROM scope_keys WHERE {where}", args)
    conn.execute(f"DELETE FROM tombstones_keyed WHERE {where}", args)
    conn.execute("INSERT INTO forgotten_scopes(tenant, user_id, agent_id, forgotten_at) VALUES (%s,%s,%s,%s)",
                 (tenant_of(scope), scope.user_id, scope.agent_id, _now()))


# -- supersession ----------------------------------------------------------------
def mark_superseded(conn: Any, old_ids: Sequence[str], new_id: str, when: datetime) -> None:
    """Only units of the same user and agent as ``new_id`` can be superseded by it."""
    owner = conn.execute("SELECT user_id, agent_id FROM units WHERE id = %s", (new_id,)).fetchone()
    for old in old_ids:
        cur = conn.execute(
            "UPDATE units SET superseded_by = %s, superseded_at = %s, superseded_ts = %s WHERE id = %s "
            "AND superseded_by IS NULL AND user_id IS NOT DISTINCT FROM %s AND agent_id IS NOT DISTINCT FROM %s",
            (new_id, when.isoformat(), when.timestamp(), old, *(owner or (None, None))),
        )
        if cur.rowcount != 1 or owner is None:
            raise NotFoundError(f"no current unit {old!r} of the same user and agent to supersede")


def reconnect(conn: Any, successor: Mapping[str, str | None], actor: str) -> None:
    """Units replaced by a deleted unit: now replaced by its surviving successor, or current again."""
    if not successor:
        return
    rows = conn.execute("SELECT id, user_id, agent_id, session_id, superseded_by FROM units "
                        "WHERE superseded_by = ANY(%s)", (list(successor),)).fetchall()
    for uid, user_id, agent_id, session_id, deleted in rows:
        heir = heir_of(deleted, successor)
        if heir is None:
            conn.execute("UPDATE units SET superseded_by = NULL, superseded_at = NULL, superseded_ts = NULL "
                         "WHERE id = %s", (uid,))
        else:
            conn.execute("UPDATE units SET superseded_by = %s WHERE id = %s", (heir, uid))
        log_event(conn, reconnect_event(uid, Scope(user_id, agent_id, session_id), deleted, heir, actor))
