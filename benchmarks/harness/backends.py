"""Where the retrieval benchmark's memories live: in memory (default) or in PostgreSQL databases.

``--url postgresql://...`` names a server on which the benchmark may create
databases: each conversation (and each distinct setting) gets its own
database, as each gets its own ``Memory()`` by default, so BM25 statistics
stay per conversation on both backends; the databases are dropped at the end.
``--url pgserver`` starts a private PostgreSQL 16 + pgvector from PyPI
``pgserver`` for the run (in a temporary folder), so the committed command
runs anywhere the ``postgres`` extra is installed.
"""

from __future__ import annotations

import itertools
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit


class Databases:
    """Creates and drops one database per ``Memory`` on a PostgreSQL server."""

    def __init__(self, admin_url: str) -> None:
        self.admin_url = admin_url
        self._names = (f"omnimem_bench_{os.getpid()}_{n}" for n in itertools.count())
        self.made: list[str] = []

    def _admin(self, sql: str) -> None:
        import psycopg

        with psycopg.connect(self.admin_url, autocommit=True) as conn:
            conn.execute(sql)

    def fresh(self) -> str:
        name = next(self._names)
        self._admin(f"CREATE DATABASE {name}")
        self.made.append(name)
        parts = urlsplit(self.admin_url)
        return urlunsplit((parts.scheme, parts.netloc, "/" + name, parts.query, ""))

    def drop(self, url: str) -> None:
        name = urlsplit(url).path.lstrip("/")
        self._admin(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        if name in self.made:
            self.made.remove(name)


@contextmanager
def database_server(url: str | None) -> Iterator[Databases | None]:
    """``None`` (in-memory stores), a given server, or a private pgserver started for this run."""
    if url is None:
        yield None
        return
    if url != "pgserver":
        yield Databases(url)
        return
    import pgserver

    root = Path(tempfile.mkdtemp(prefix="omnimem-bench-pg-"))
    root.chmod(0o755)  # pgserver runs postgres as its own system user when started as root
    handle: Any = pgserver.get_server(root / "data", cleanup_mode="delete")
    try:
        yield Databases(handle.get_uri())
    finally:
        handle.cleanup()  # stops the server and deletes its data folder
        shutil.rmtree(root, ignore_errors=True)
