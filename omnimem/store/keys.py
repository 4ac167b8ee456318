"""API keys and console sessions as the unit store keeps them: hashed, never the secret.

A key is ``omk_<key_id>_<secret>``; the store holds its id, the SHA-256 of
the whole key, its name, role and scope, and when it was created and revoked.
A console session is an opaque random token (stored as its SHA-256) mapped to
a key id and a CSRF token, so every server process of one store (uvicorn
workers) sees the same logins.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

ROLES = ("read", "write", "admin")
ADD_MAX_TRUST = "ALTER TABLE api_keys ADD COLUMN max_trust TEXT NOT NULL DEFAULT 'trusted'"  # stores from before

SCHEMA = [
    """CREATE TABLE IF NOT EXISTS api_keys (
        key_id TEXT PRIMARY KEY,
        key_hash TEXT NOT NULL,
        name TEXT NOT NULL,
        role TEXT NOT NULL,
        user_id TEXT,
        agent_id TEXT,
        created_at TEXT NOT NULL,
        revoked_at TEXT
    )""",  # max_trust: added by a later migration (ADD_MAX_TRUST)
    """CREATE TABLE IF NOT EXISTS api_sessions (
        token_hash TEXT PRIMARY KEY,
        key_id TEXT NOT NULL,
        csrf_token TEXT NOT NULL,
        expires_at TEXT NOT NULL
    )""",
]


@dataclass(frozen=True, slots=True)
class ApiKey:
    """A stored API key (no secret): who it acts for and what it may do."""

    key_id: str
    key_hash: str  # hex SHA-256 of the whole key string
    name: str
    role: str  # read, write or admin
    user_id: str | None
    agent_id: str | None
    created_at: datetime
    revoked_at: datetime | None = None
    max_trust: str = "trusted"  # the highest trust its writes may have (omnimem.mau.TRUST_LEVELS)

    @property
    def active(self) -> bool:
        return self.revoked_at is None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready view, without the hash (``keys list``)."""
        return {
            "key_id": self.key_id, "name": self.name, "role": self.role, "user_id": self.user_id,
            "agent_id": self.agent_id, "created_at": self.created_at.isoformat(),
            "revoked_at": self.revoked_at.isoformat() if self.revoked_at else None, "max_trust": self.max_trust,
        }


@dataclass(frozen=True, slots=True)
class ApiSession:
    """A console login: the key it acts as, its CSRF token and when it ends."""

    token_hash: str
    key_id: str
    csrf_token: str
    expires_at: datetime


_KEY_COLUMNS = "key_id, key_hash, name, role, user_id, agent_id, created_at, revoked_at, max_trust"


def put_key(conn: sqlite3.Connection, key: ApiKey) -> None:
    conn.execute(
        f"INSERT INTO api_keys({_KEY_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?)",
        (key.key_id, key.key_hash, key.name, key.role, key.user_id, key.agent_id, key.created_at.isoformat(),
         key.revoked_at.isoformat() if key.revoked_at else None, key.max_trust),
    )


def find_key(conn: sqlite3.Connection, key_id: str) -> ApiKey | None:
    row = conn.execute(f"SELECT {_KEY_COLUMNS} FROM api_keys WHERE key_id = ?", (key_id,)).fetchone()
    return _key(row) if row else None


def list_keys(conn: sqlite3.Connection) -> list[ApiKey]:
    return [_key(r) for r in conn.execute(f"SELECT {_KEY_COLUMNS} FROM api_keys ORDER BY created_at, key_id")]


def revoke_key(conn: sqlite3.Connection, key_id: str, when: datetime) -> bool:
    """Mark a key revoked (and end its sessions); whether an active key was found."""
    cur = conn.execute("UPDATE api_keys SET revoked_at = ? WHERE key_id = ? AND revoked_at IS NULL",
                       (when.isoformat(), key_id))
    conn.execute("DELETE FROM api_sessions WHERE key_id = ?", (key_id,))
    return cur.rowcount > 0


def put_session(conn: sqlite3.Connection, session: ApiSession) -> None:
    conn.execute("DELETE FROM api_sessions WHERE expires_at < ?", (datetime.now(timezone.utc).isoformat(),))
    conn.execute("INSERT INTO api_sessions(token_hash, key_id, csrf_token, expires_at) VALUES (?,?,?,?)",
                 (session.token_hash, session.key_id, session.csrf_token, session.expires_at.isoformat()))


def find_session(conn: sqlite3.Connection, token_hash: str) -> ApiSession | None:
    row = conn.execute("SELECT token_hash, key_id, csrf_token, expires_at FROM api_sessions WHERE token_hash = ?",
                       (token_hash,)).fetchone()
    if row is None:
        return None
    return ApiSession(row[0], row[1], row[2], datetime.fromisoformat(row[3]))


def drop_session(conn: sqlite3.Connection, token_hash: str) -> None:
    conn.execute("DELETE FROM api_sessions WHERE token_hash = ?", (token_hash,))


def _key(row: Any) -> ApiKey:
    return ApiKey(row[0], row[1], row[2], row[3], row[4], row[5], datetime.fromisoformat(row[6]),
                  datetime.fromisoformat(row[7]) if row[7] else None, row[8])
