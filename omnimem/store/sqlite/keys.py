"""The SQLite store's API keys and console sessions (see :mod:`omnimem.store.keys`).

A mixin of :class:`omnimem.store.sqlite.store.SQLiteStore`: key writes are their own
short transactions and do not move the change counter (indexes ignore them).
"""

from __future__ import annotations

import sqlite3
import threading
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING
from datetime import datetime, timezone

from omnimem.store import keys
from omnimem.store.keys import ApiKey, ApiSession


class SQLiteKeys:
    """``put_key``, ``find_key``, ``list_keys``, ``revoke_key`` and the session methods over SQLite."""

    _conn: sqlite3.Connection
    _lock: threading.RLock

    if TYPE_CHECKING:  # provided by the store class this mixin is part of
        def _tx(self) -> AbstractContextManager[sqlite3.Connection]: ...

    def put_key(self, key: ApiKey) -> None:
        with self._lock, self._tx() as conn:
            keys.put_key(conn, key)

    def find_key(self, key_id: str) -> ApiKey | None:
        with self._lock:
            return keys.find_key(self._conn, key_id)

    def list_keys(self) -> list[ApiKey]:
        with self._lock:
            return keys.list_keys(self._conn)

    def revoke_key(self, key_id: str) -> bool:
        with self._lock, self._tx() as conn:
            return keys.revoke_key(conn, key_id, datetime.now(timezone.utc))

    def put_session(self, session: ApiSession) -> None:
        with self._lock, self._tx() as conn:
            keys.put_session(conn, session)

    def find_session(self, token_hash: str) -> ApiSession | None:
        with self._lock:
            return keys.find_session(self._conn, token_hash)

    def drop_session(self, token_hash: str) -> None:
        with self._lock, self._tx() as conn:
            keys.drop_session(conn, token_hash)
