"""Which backend an engine runs on: one function from ``path``/``url`` to a store and its search.

``Memory()`` and ``Memory(path=...)`` run the embedded backend (SQLite with
FAISS and bm25s in the process); ``Memory(url="postgresql://...")`` the
PostgreSQL one (search in the database, nothing in the process).
"""

from __future__ import annotations

from pathlib import Path

from omnimem.config import Settings
from omnimem.contract.checks import is_database_url
from omnimem.errors import ConfigError
from omnimem.store.base import CandidateSearch, Store
from omnimem.store.sqlite.opening import open_read_only
from omnimem.store.sqlite.store import SQLiteStore


def open_store(path: Path | None, url: str | None, *, settings: Settings, read_only: bool) -> Store:
    """The unit store of ``path`` (embedded) or ``url`` (PostgreSQL)."""
    if url is not None:
        if not is_database_url(url):
            raise ConfigError(f"no engine serves {url[:40]!r}; use postgresql://user:pw@host:5432/db "
                              "(or postgresql+pgserver://./pgdata: a local server, see omnimem pg-start)")
        from omnimem.store.postgres import local_server
        from omnimem.store.postgres.store import PostgresStore

        if local_server.is_local_server_url(url):
            url = local_server.resolve(url)
        return PostgresStore(url, sparse_context=settings.sparse_context, read_only=read_only,
                             language=settings.language)
    return SQLiteStore(path, read_only=open_read_only(path, read_only))


def open_search(store: Store, dim: int, path: Path | None, settings: Settings) -> CandidateSearch:
    """The candidate search over ``store``: SQL for PostgreSQL, FAISS + bm25s for SQLite."""
    if isinstance(store, SQLiteStore):
        from omnimem.index.manager import IndexSet  # FAISS: only for an embedded store
        from omnimem.index.search import EmbeddedSearch

        folder = path / "index" if path is not None else None
        return EmbeddedSearch(store, IndexSet(store, dim, folder, writable=not store.read_only,
                                              sparse_context=settings.sparse_context))
    from omnimem.store.postgres.search import PgSearch
    from omnimem.store.postgres.store import PostgresStore

    assert isinstance(store, PostgresStore)
    return PgSearch(store)
