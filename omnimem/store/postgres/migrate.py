"""Bringing a PostgreSQL database to the current schema (``omnimem migrate --url``).

Each migration runs in its own transaction under an advisory lock, so two
processes opening a new database at once never run one twice. A database
without the ``vector`` extension available is a typed error saying how to
install it.
"""

from __future__ import annotations

from typing import Any

from omnimem.errors import NotAStoreError, SchemaVersionError, StoreError
from omnimem.store.postgres.connect import describe
from omnimem.store.postgres.schema import MIGRATIONS, SCHEMA_VERSION

_LOCK = 0x6F6D6E69  # "omni": the advisory lock every schema change takes


def current_version(conn: Any) -> int:
    """The schema version recorded in ``meta`` (0: an empty database)."""
    tables = {r[0] for r in conn.execute(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()")}
    if not tables:
        return 0
    if "meta" not in tables:
        raise NotAStoreError("the database holds tables but no omnimem store (no meta table); use an empty database")
    row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    if row is None and conn.execute("SELECT 1 FROM meta WHERE key = 'format' AND value = 'omnimem'").fetchone() is None:
        raise NotAStoreError("the database's meta table is not an omnimem store's; use an empty database")
    return int(row[0]) if row else 0


def read_meta(url: str) -> dict[str, str]:
    """A database's meta table (embedder, dim, schema_version, ...) read without opening a store; {} if it has
    none or cannot be read (the real open then reports why). Like :func:`omnimem.store.opening.read_meta`:
    one query, no migration, so a command can choose how to open the store."""
    from omnimem.store.postgres.connect import parse_url, psycopg_modules

    psycopg, _ = psycopg_modules()
    try:
        with psycopg.connect(parse_url(url).dsn, connect_timeout=10) as conn:
            if current_version(conn) == 0:
                return {}
            return {str(k): str(v) for k, v in conn.execute("SELECT key, value FROM meta")}
    except (psycopg.Error, NotAStoreError):
        return {}


def migrate(conn: Any, *, target: int = SCHEMA_VERSION) -> list[tuple[int, str]]:
    """Apply the migrations after the database's version up to ``target``; returns those applied."""
    applied: list[tuple[int, str]] = []
    for number, name, steps in MIGRATIONS:
        if number > target:
            break
        try:
            with conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK,))
                version = current_version(conn)
                if version > SCHEMA_VERSION:
                    raise SchemaVersionError(f"database schema {version} is newer than this omnimem "
                                             f"({SCHEMA_VERSION}); upgrade omnimem")
                if number <= version:
                    continue
                for step in steps:
                    conn.execute(step)
                conn.execute("INSERT INTO meta(key, value) VALUES ('schema_version', %s) "
                             "ON CONFLICT (key) DO UPDATE SET value = excluded.value", (str(number),))
                applied.append((number, name))
        except (SchemaVersionError, NotAStoreError):
            raise
        except Exception as exc:
            text = describe(exc)
            if "vector" in text and ("extension" in text or "control file" in text):
                raise StoreError(
                    f"the database has no pgvector extension ({text}); install pgvector on the server and run "
                    "CREATE EXTENSION vector as a superuser, or use a managed PostgreSQL that offers it"
                ) from None
            if getattr(exc, "sqlstate", None) == "42501":  # insufficient privilege
                raise StoreError(f"cannot create the omnimem schema ({text}); grant this user CREATE on the "
                                 "database, or run omnimem migrate --url ... as its owner") from None
            raise StoreError(f"migration {number} ({name}) failed, nothing of it was applied: {text}") from None
    return applied
