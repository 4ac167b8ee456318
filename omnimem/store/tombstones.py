"""Tombstones of deleted content, keyed so that a forgotten scope leaves nothing to test a guess against.

Re-ingest protection must recognise content that was deleted, so something
derived from it has to stay. A plain SHA-256 would let anyone holding the
store confirm a guess ("was 'I am pregnant' in Anna's memory?"). So a
tombstone holds ``HMAC(key, content_hash)``, where the key belongs to one
user/agent pair and lives in ``scope_keys``:

* a unit deleted or forgotten by id, session or time range leaves a keyed
  tombstone; while the pair's key lives, the same content is not stored again
  (unless ``allow_forgotten``);
* when a whole user or agent is forgotten, its keys and tombstones are
  destroyed: nothing left can confirm a guess. What stays is a row in
  ``forgotten_scopes`` (who, when; no content), which stops an import from
  restoring units recorded before that time (an old backup).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
import sqlite3
from collections.abc import Iterable, Sequence
from datetime import datetime, timezone
from typing import Any

from omnimem.mau import Scope
from omnimem.store.sqlite.unit_rows import chunks

SCHEMA = [
    """CREATE TABLE IF NOT EXISTS scope_keys (
        user_id TEXT NOT NULL,
        agent_id TEXT NOT NULL,
        key BLOB NOT NULL,
        PRIMARY KEY (user_id, agent_id)
    )""",
    """CREATE TABLE IF NOT EXISTS forgotten_scopes (
        user_id TEXT,
        agent_id TEXT,
        forgotten_at TEXT NOT NULL
    )""",
    """CREATE TABLE IF NOT EXISTS tombstones_keyed (
        mark TEXT PRIMARY KEY,
        unit_id TEXT NOT NULL,
        user_id TEXT,
        agent_id TEXT,
        session_id TEXT,
        forgotten_at TEXT NOT NULL
    )""",
    "CREATE INDEX IF NOT EXISTS tombstones_keyed_unit ON tombstones_keyed (unit_id)",
]

Owner = tuple[str | None, str | None]  # (user_id, agent_id)
_NONE = ""  # scope ids are never empty strings (make_scope refuses them), so "" stands for "none"


def _now() -> str:
    return datetime.now(timezone.utc).isoformat()


def scope_key(conn: sqlite3.Connection, user_id: str | None, agent_id: str | None, *, create: bool) -> bytes | None:
    """The secret of one user/agent pair (made on first use when ``create``)."""
    pair = (user_id or _NONE, agent_id or _NONE)
    row = conn.execute("SELECT key FROM scope_keys WHERE user_id = ? AND agent_id = ?", pair).fetchone()
    if row is not None:
        return bytes(row[0])
    if not create:
        return None
    key = secrets.token_bytes(32)
    conn.execute("INSERT INTO scope_keys(user_id, agent_id, key) VALUES (?, ?, ?)", (*pair, key))
    return key


def mark(key: bytes, content_hash: str) -> str:
    return hmac.new(key, content_hash.encode("ascii"), hashlib.sha256).hexdigest()


def bury(conn: sqlite3.Connection, unit_id: str, content_hash: str, scope: Scope) -> None:
    """Leave a keyed tombstone for a deleted unit (inside the caller's transaction)."""
    key = scope_key(conn, scope.user_id, scope.agent_id, create=True)
    assert key is not None
    conn.execute(
        "INSERT OR REPLACE INTO tombstones_keyed(mark, unit_id, user_id, agent_id, session_id, forgotten_at) "
        "VALUES (?,?,?,?,?,?)",
        (mark(key, content_hash), unit_id, scope.user_id, scope.agent_id, scope.session_id, _now()),
    )


def find(conn: sqlite3.Connection, items: Iterable[tuple[Scope, str]]) -> dict[str, str]:
    """Which of these (scope, content hash) pairs were deleted: content hash -> deleted unit id."""
    keys: dict[tuple[str | None, str | None], bytes | None] = {}
    wanted: dict[str, str] = {}  # mark -> content hash
    for scope, chash in items:
        pair = (scope.user_id, scope.agent_id)
        if pair not in keys:
            keys[pair] = scope_key(conn, *pair, create=False)
        key = keys[pair]
        if key is not None:  # no key: nothing of this pair was ever deleted, or the pair was forgotten
            wanted[mark(key, chash)] = chash
    out: dict[str, str] = {}
    for chunk in chunks(list(wanted), 500):  # one query per 500 marks, not one per item
        rows = conn.execute(f"SELECT mark, unit_id FROM tombstones_keyed WHERE mark IN ({','.join('?' * len(chunk))})",
                            chunk).fetchall()
        for found, unit_id in rows:
            out[wanted[found]] = str(unit_id)
    return out


def owner(conn: sqlite3.Connection, unit_id: str) -> Scope | None:
    """The scope a deleted unit belonged to, while its tombstone lasts."""
    row = conn.execute(
        "SELECT user_id, agent_id, session_id FROM tombstones_keyed WHERE unit_id = ? LIMIT 1", (unit_id,)
    ).fetchone()
    return Scope(*row) if row else None


def past_owners(conn: Any, unit_ids: Sequence[str], mark: str = "?") -> dict[str, set[Owner]]:
    """The (user, agent) pairs this store's tombstones and audit events name for each of these ids: only ids
    with a past here appear. Plain SQL (``mark``: the driver's placeholder), SQLite and PostgreSQL alike.

    An import checks a unit's id against it, so that no scope can take over an id another scope once held
    (and with it that scope's history)."""
    out: dict[str, set[Owner]] = {}
    for chunk in chunks(list(dict.fromkeys(unit_ids)), 500):
        marks = ",".join([mark] * len(chunk))
        for unit_id, user_id, agent_id in conn.execute(
                f"SELECT unit_id, user_id, agent_id FROM tombstones_keyed WHERE unit_id IN ({marks})", chunk):
            out.setdefault(str(unit_id), set()).add((user_id, agent_id))
        # two plain reads, no join on seq: Citus distributes both tables by tenant, not by seq
        events: dict[int, list[str]] = {}
        for unit_id, seq in conn.execute(f"SELECT unit_id, seq FROM audit_units WHERE unit_id IN ({marks})", chunk):
            events.setdefault(int(seq), []).append(str(unit_id))
        for part in chunks(list(events), 500):
            for seq, scope in conn.execute(
                    f"SELECT seq, scope FROM audit_log WHERE seq IN ({','.join([mark] * len(part))})", part):
                named = json.loads(scope)
                for unit_id in events[int(seq)]:
                    out.setdefault(unit_id, set()).add((named.get("user_id"), named.get("agent_id")))
    return out


def forget_scope(conn: sqlite3.Connection, scope: Scope) -> None:
    """A whole user and/or agent was forgotten: destroy its keys and tombstones, remember who and when."""
    where, args = _owner_clause(scope)
    conn.execute(f"DELETE FROM scope_keys WHERE {where}", [a or _NONE for a in args])
    conn.execute(f"DELETE FROM tombstones_keyed WHERE {where}", args)
    conn.execute("INSERT INTO forgotten_scopes(user_id, agent_id, forgotten_at) VALUES (?,?,?)",
                 (scope.user_id, scope.agent_id, _now()))


def _owner_clause(scope: Scope) -> tuple[str, list[Any]]:
    parts, args = [], []
    for col, value in (("user_id", scope.user_id), ("agent_id", scope.agent_id)):
        if value is not None:
            parts.append(f"{col} = ?")
            args.append(value)
    return " AND ".join(parts) or "1=1", args


def forgotten_since(conn: Any, scope: Scope) -> datetime | None:
    """When this user/agent pair was last wholly forgotten (None: never). Plain SQL: SQLite and PostgreSQL."""
    latest: datetime | None = None
    for user_id, agent_id, when in conn.execute("SELECT user_id, agent_id, forgotten_at FROM forgotten_scopes"):
        if user_id not in (None, scope.user_id) or agent_id not in (None, scope.agent_id):
            continue
        at = datetime.fromisoformat(when)
        latest = at if latest is None or at > latest else latest
    return latest


def whole_scope(scope: Scope, *, timed: bool, by_ids: bool) -> bool:
    """Whether a forget removes everything of a user and/or agent (its key can then go)."""
    owned = scope.user_id is not None or scope.agent_id is not None
    return owned and not timed and not by_ids and scope.session_id is None


# -- migration 7 ----------------------------------------------------------------
_REMOVED = ("delete", "forget")
_CREATED = ("add", "update", "import", "supersede")


def migrate_plain_hashes(conn: sqlite3.Connection) -> None:
    """Rewrite plain-hash tombstones as keyed ones, and take content hashes out of the audit log.

    A tombstone is re-keyed with its unit's user/agent key when the log tells
    who owned the unit; if its unit went in a forget of a whole user or agent,
    or the owner is unknown, it is dropped (and the forget recorded in
    ``forgotten_scopes``). The audit log is append-only by trigger: this
    migration drops the triggers, removes ``content_hashes`` from event
    details, restores the triggers and logs a ``migrate`` event saying so.
    """
    from omnimem.store.audit import AUDIT_SCHEMA, AuditEvent, log_event

    kept = dropped = 0
    rows = conn.execute("SELECT content_hash, unit_id, forgotten_at FROM tombstones").fetchall()
    for chash, unit_id, forgotten_at in rows:
        events = _events_about(conn, unit_id)
        created = next((e for e in events if e[0] in _CREATED), None)
        removed = next((e for e in reversed(events) if e[0] in _REMOVED), None)
        if removed is not None and removed[0] == "forget":
            scope, details = removed[1], removed[2]
            timed = details.get("since") is not None or details.get("until") is not None
            if whole_scope(scope, timed=timed, by_ids=False) or (scope.is_empty() and details.get("all")):
                conn.execute("INSERT INTO forgotten_scopes(user_id, agent_id, forgotten_at) VALUES (?,?,?)",
                             (scope.user_id, scope.agent_id, forgotten_at))
                dropped += 1
                continue
        if created is None:
            dropped += 1
            continue
        bury(conn, unit_id, chash, created[1])
        kept += 1
    conn.execute("DROP TABLE tombstones")
    conn.execute("DROP TRIGGER IF EXISTS audit_log_no_update")
    rewritten = 0
    for seq, details in conn.execute("SELECT seq, details FROM audit_log").fetchall():
        data = json.loads(details)
        if "content_hashes" in data:
            del data["content_hashes"]
            conn.execute("UPDATE audit_log SET details = ? WHERE seq = ?", (json.dumps(data), seq))
            rewritten += 1
    for statement in AUDIT_SCHEMA:
        if "audit_log_no_update" in statement:
            conn.execute(statement)
    if kept or dropped or rewritten:
        log_event(conn, AuditEvent(
            "migrate", "omnimem", (), reason="schema 7: keyed tombstones, no content hashes in the log",
            details={"tombstones_rekeyed": kept, "tombstones_dropped": dropped, "events_rewritten": rewritten},
        ))


def _events_about(conn: sqlite3.Connection, unit_id: str) -> list[tuple[str, Scope, dict[str, Any]]]:
    rows: Sequence[tuple[str, str, str]] = conn.execute(
        "SELECT action, scope, details FROM audit_log WHERE seq IN (SELECT seq FROM audit_units WHERE unit_id = ?) "
        "ORDER BY seq", (unit_id,)).fetchall()
    return [(action, Scope(**json.loads(scope)), json.loads(details)) for action, scope, details in rows]
