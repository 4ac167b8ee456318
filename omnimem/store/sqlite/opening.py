"""Opening a store folder: writable (created if needed) or read-only.

A store on a read-only file system, or one the user cannot write, is opened
read-only: searches, reads, stats and export work, and every write raises
:class:`~omnimem.errors.ReadOnlyStoreError` before anything changes.
"""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path
from urllib.parse import quote

from omnimem.errors import NotAStoreError, StoreError

DB_NAME = "omnimem.db"
PARTS = ("cold", "index")  # folders a writable store writes into


def is_writable(path: Path) -> bool:
    """Whether ``path`` (an existing store) can be written (``False`` on a read-only file system too)."""
    db = path / DB_NAME
    return os.access(path, os.W_OK | os.X_OK) and (not db.exists() or os.access(db, os.W_OK))


def open_read_only(path: Path | None, asked: bool) -> bool:
    """Read-only when asked, or when the store exists and cannot be written (instead of refusing it)."""
    return bool(asked) or (path is not None and path.is_dir() and not is_writable(path))


def check_writable(path: Path) -> None:
    """Create the folder if needed; a part that cannot be written is a typed error before anything commits."""
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StoreError(f"cannot create the store folder {path}: {exc.strerror or exc}") from None
    if not os.access(path, os.W_OK | os.X_OK):
        raise StoreError(f"store folder {path} is not writable; open it with read_only=True to read it")
    for name in PARTS:
        part = path / name
        if part.exists() and (not part.is_dir() or not os.access(part, os.W_OK | os.X_OK)):
            raise StoreError(f"{part} is not a writable folder; fix its permissions or open the store read_only=True")


def _peek(db: Path) -> sqlite3.Connection:
    """A read-only look at ``db`` that changes nothing: ``immutable`` (no lock, no journal, no -wal or -shm file
    left behind) unless a WAL file is beside it, which only a plain read-only connection reads."""
    wal = db.with_name(db.name + "-wal").exists()
    return sqlite3.connect(f"file:{quote(str(db.resolve()))}?{'mode=ro' if wal else 'immutable=1'}", uri=True)


def check_store_file(db: Path) -> None:
    """Refuse an ``omnimem.db`` that another program made before anything opens it: its schema is read
    read-only first, so a refused file keeps its bytes, its journal mode and its folder (no -wal, no -shm).

    An empty database (new, or made by a store that is being created) passes; one with tables must have
    omnimem's ``meta`` table saying ``format = omnimem``.
    """
    if not db.is_file() or db.stat().st_size == 0:
        return
    try:
        conn = _peek(db)
        try:
            tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
            ours = "meta" in tables and _format(conn) == "omnimem"
        finally:
            conn.close()
    except sqlite3.DatabaseError as exc:
        raise NotAStoreError(f"{db.parent} does not hold a readable omnimem store: {exc}") from exc
    if tables and not ours:
        raise NotAStoreError(f"{db.parent} holds a SQLite file that is not an omnimem store ({DB_NAME} was left "
                             "unchanged); choose another folder")


def _format(conn: sqlite3.Connection) -> str | None:
    try:
        row = conn.execute("SELECT value FROM meta WHERE key='format'").fetchone()
    except sqlite3.DatabaseError:  # a meta table of another shape
        return None
    return str(row[0]) if row else None


def connect(db: Path, busy_timeout_ms: int, *, read_only: bool) -> sqlite3.Connection:
    """A connection in autocommit mode; read-only through SQLite's ``mode=ro`` (``immutable`` as a last resort)."""
    timeout = busy_timeout_ms / 1000
    if not read_only:
        conn = sqlite3.connect(str(db), check_same_thread=False, isolation_level=None, timeout=timeout)
    else:
        if not db.is_file():
            raise NotAStoreError(f"{db.parent} holds no omnimem store ({DB_NAME} missing)")
        uri = f"file:{quote(str(db.resolve()))}?mode=ro"
        conn = sqlite3.connect(uri, uri=True, check_same_thread=False, isolation_level=None, timeout=timeout)
        try:
            conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
        except sqlite3.OperationalError:  # read-only folder without the WAL's shared-memory file: nobody can write
            conn.close()
            conn = sqlite3.connect(uri + "&immutable=1", uri=True, check_same_thread=False, isolation_level=None)
    conn.execute(f"PRAGMA busy_timeout={int(busy_timeout_ms)}")
    return conn


def read_meta(path: Path) -> dict[str, str]:
    """A store's meta table (embedder, dim, schema_version, ...) read without opening the store; {} if unreadable.

    Cheap (one read-only query, no migration, no index), so a command can choose how to open a store.
    """
    db = path / DB_NAME
    if not db.is_file():
        return {}
    try:
        conn = _peek(db)
        try:
            return {str(k): str(v) for k, v in conn.execute("SELECT key, value FROM meta")}
        finally:
            conn.close()
    except sqlite3.Error:
        return {}


def indexes_saved(path: Path, seq: str | None) -> bool:
    """Whether the store's index files are saved and reflect change counter ``seq`` (dense and BM25 both).

    A read-only open loads such files; without them it rebuilds the indexes in memory at every open,
    where a writable open saves what it rebuilt for the next one.
    """
    folder = path / "index"
    try:
        state = json.loads((folder / "state.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return (isinstance(state, dict) and seq is not None and str(state.get("seq")) == seq
            and (folder / "dense.faiss").is_file() and (folder / "bm25").is_dir())
