"""The PostgreSQL store's API keys and console sessions (see :mod:`omnimem.store.keys`).

A mixin of :class:`omnimem.store.postgres.store.PostgresStore`. Keys and
sessions are the server's, not a tenant's memories: two small global tables
(Citus reference tables), each write its own short transaction that does not
move the change counter, so every server process on the database sees the
same keys and logins at once.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from omnimem.store.keys import ApiKey, ApiSession

SCHEMA = [
    """CREATE TABLE IF NOT EXISTS api_keys (
        key_id TEXT PRIMARY KEY, key_hash TEXT NOT NULL, name TEXT NOT NULL, role TEXT NOT NULL,
        user_id TEXT, agent_id TEXT, created_at TIMESTAMPTZ NOT NULL, revoked_at TIMESTAMPTZ)""",
    """CREATE TABLE IF NOT EXISTS api_sessions (
        token_hash TEXT PRIMARY KEY, key_id TEXT NOT NULL, csrf_token TEXT NOT NULL, expires_at TIMESTAMPTZ NOT NULL)""",
    "CREATE INDEX IF NOT EXISTS api_sessions_key ON api_sessions (key_id)",
]

_COLUMNS = "key_id, key_hash, name, role, user_id, agent_id, created_at, revoked_at, max_trust"


class PgKeys:
    """``put_key``, ``find_key``, ``list_keys``, ``revoke_key`` and the session methods over PostgreSQL."""

    if TYPE_CHECKING:  # provided by the store class this mixin is part of
        def _tx(self, what: str = "the write") -> AbstractContextManager[Any]: ...
        def _read(self) -> AbstractContextManager[Any]: ...

    def put_key(self, key: ApiKey) -> None:
        with self._tx("storing an API key") as conn:
            conn.execute(f"INSERT INTO api_keys({_COLUMNS}) VALUES (%s,%s,%s,%s,%s,%s,%s,%s,%s)",
                         (key.key_id, key.key_hash, key.name, key.role, key.user_id, key.agent_id, key.created_at,
                          key.revoked_at, key.max_trust))

    def find_key(self, key_id: str) -> ApiKey | None:
        with self._read() as conn:
            row = conn.execute(f"SELECT {_COLUMNS} FROM api_keys WHERE key_id = %s", (key_id,)).fetchone()
        return _key(row) if row else None

    def list_keys(self) -> list[ApiKey]:
        with self._read() as conn:
            return [_key(r) for r in conn.execute(f"SELECT {_COLUMNS} FROM api_keys ORDER BY created_at, key_id")]

    def revoke_key(self, key_id: str) -> bool:
        with self._tx("revoking an API key") as conn:
            cur = conn.execute("UPDATE api_keys SET revoked_at = %s WHERE key_id = %s AND revoked_at IS NULL",
                               (datetime.now(timezone.utc), key_id))
            conn.execute("DELETE FROM api_sessions WHERE key_id = %s", (key_id,))
            return bool(cur.rowcount)

    def put_session(self, session: ApiSession) -> None:
        with self._tx("storing a console session") as conn:
            conn.execute("DELETE FROM api_sessions WHERE expires_at < %s", (datetime.now(timezone.utc),))
            conn.execute("INSERT INTO api_sessions(token_hash, key_id, csrf_token, expires_at) VALUES (%s,%s,%s,%s)",
                         (session.token_hash, session.key_id, session.csrf_token, session.expires_at))

    def find_session(self, token_hash: str) -> ApiSession | None:
        with self._read() as conn:
            row = conn.execute("SELECT token_hash, key_id, csrf_token, expires_at FROM api_sessions "
                               "WHERE token_hash = %s", (token_hash,)).fetchone()
        return ApiSession(row[0], row[1], row[2], _utc(row[3])) if row else None

    def drop_session(self, token_hash: str) -> None:
        with self._tx("ending a console session") as conn:
            conn.execute("DELETE FROM api_sessions WHERE token_hash = %s", (token_hash,))


def _utc(value: datetime) -> datetime:
    return value.astimezone(timezone.utc)


def _key(row: Any) -> ApiKey:
    return ApiKey(row[0], row[1], row[2], row[3], row[4], row[5], _utc(row[6]), _utc(row[7]) if row[7] else None,
                  row[8])
