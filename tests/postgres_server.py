"""A real PostgreSQL 16 with pgvector (PyPI ``pgserver``), started once per test session.

Each test gets its own database, copied from a migrated template (``CREATE
DATABASE ... TEMPLATE``), so tests stay independent and cheap. Without
``psycopg``/``pgserver`` the PostgreSQL tests skip with the reason, except
when ``OMNIMEM_REQUIRE_POSTGRES=1`` (CI), where they fail.
"""

from __future__ import annotations

import itertools
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest

TEMPLATE = "omnimem_template"


class PostgresServer:
    """The running server: URLs of fresh databases."""

    def __init__(self, admin_url: str) -> None:
        self.admin_url = admin_url
        self._names = itertools.count()

    def url(self, database: str) -> str:
        parts = urlsplit(self.admin_url)
        return urlunsplit((parts.scheme, parts.netloc, "/" + database, parts.query, ""))

    def admin(self, sql: str) -> None:
        import psycopg

        with psycopg.connect(self.admin_url, autocommit=True) as conn:
            conn.execute(sql)

    def fresh(self, *, migrated: bool = True) -> str:
        """A new empty database (from the migrated template unless ``migrated=False``); returns its URL."""
        name = f"t{os.getpid()}_{next(self._names)}"
        self.admin(f"CREATE DATABASE {name} TEMPLATE {TEMPLATE if migrated else 'template0'}")
        return self.url(name)

    def drop(self, url: str) -> None:
        self.admin(f"DROP DATABASE IF EXISTS {urlsplit(url).path.lstrip('/')} WITH (FORCE)")


def start_server() -> tuple[PostgresServer, object, Path]:
    """Start pgserver in a private folder the ``pgserver`` system user can reach (it runs postgres as root)."""
    try:
        import pgserver
        import psycopg  # noqa: F401
        import pgvector  # noqa: F401
    except ImportError as exc:
        if os.environ.get("OMNIMEM_REQUIRE_POSTGRES") == "1":
            pytest.fail(f"PostgreSQL tests required (OMNIMEM_REQUIRE_POSTGRES=1) but {exc.name} is missing")
        pytest.skip(f"PostgreSQL tests need the postgres extra and pgserver ({exc.name} is missing)")
    root = Path(tempfile.mkdtemp(prefix="omnimem-pg-"))
    root.chmod(0o755)
    handle = pgserver.get_server(root / "data", cleanup_mode="delete")
    server = PostgresServer(handle.get_uri())
    for setting in ("fsync", "synchronous_commit", "full_page_writes"):  # a throwaway server: no durability
        server.admin(f"ALTER SYSTEM SET {setting} = off")
    server.admin("SELECT pg_reload_conf()")
    server.admin(f"DROP DATABASE IF EXISTS {TEMPLATE}")
    server.admin(f"CREATE DATABASE {TEMPLATE}")
    from omnimem.store.postgres.store import PostgresStore

    PostgresStore(server.url(TEMPLATE)).close()  # migrated once; every test database copies it
    return server, handle, root


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresServer]:
    server, handle, root = start_server()
    yield server
    handle.cleanup()  # type: ignore[attr-defined]
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def pg_url(postgres: PostgresServer) -> Iterator[str]:
    """The URL of a fresh, migrated database, dropped after the test."""
    url = postgres.fresh()
    yield url
    postgres.drop(url)
