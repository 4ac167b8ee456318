"""Connecting to PostgreSQL: URL checks, the connection pool, and errors translated to typed ones.

``psycopg`` (3, with its pool) and ``pgvector`` are the ``postgres`` extra,
imported lazily so the core never needs them. A URL may carry one
omnimem-only parameter, ``omnimem_user``: every connection is then bound to
that user (row-level security, see :mod:`omnimem.store.postgres.schema`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from omnimem.errors import ConfigError, StoreError, missing_extra

SCHEMES = ("postgresql", "postgres")
BIND_PARAM = "omnimem_user"


def is_postgres_url(url: str) -> bool:
    return urlsplit(url).scheme.lower() in SCHEMES


@dataclass(frozen=True, slots=True)
class Target:
    """Where to connect (``dsn``, for psycopg) and the user a connection is bound to, if any."""

    dsn: str
    bound_user: str | None

    @property
    def shown(self) -> str:
        """The URL without its password, for messages."""
        parts = urlsplit(self.dsn)
        host = parts.hostname or ""
        netloc = (f"{parts.username}@" if parts.username else "") + host + (f":{parts.port}" if parts.port else "")
        return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def parse_url(url: str) -> Target:
    """Split the omnimem parameter off a ``postgresql://`` URL; a malformed URL is a ConfigError."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError on a bad port
    except ValueError as exc:
        raise ConfigError(f"not a valid PostgreSQL URL ({exc}); expected postgresql://user:pw@host:5432/db") from None
    if parts.scheme.lower() not in SCHEMES:
        raise ConfigError(f"not a PostgreSQL URL: {url[:40]!r}; expected postgresql://user:pw@host:5432/db")
    query = parse_qsl(parts.query, keep_blank_values=True)
    bound = [v for k, v in query if k == BIND_PARAM]
    rest = urlencode([(k, v) for k, v in query if k != BIND_PARAM])
    if bound and not bound[-1]:
        raise ConfigError(f"{BIND_PARAM}= in the URL needs a user id")
    return Target(urlunsplit((parts.scheme, parts.netloc, parts.path, rest, parts.fragment)),
                  bound[-1] if bound else None)


def psycopg_modules() -> tuple[Any, Any]:
    """(psycopg, psycopg_pool), or a MissingDependencyError naming the extra."""
    try:
        import psycopg
        import psycopg_pool
        import pgvector.psycopg  # noqa: F401 - the vector adapter
    except ImportError:
        raise missing_extra("psycopg (with psycopg_pool) and pgvector", "postgres") from None
    return psycopg, psycopg_pool


def open_pool(target: Target, *, max_size: int = 8, timeout: float = 30.0, read_only: bool = False) -> Any:
    """A pool of connections with the vector adapter registered (and the tenant bound, in RLS mode).

    ``read_only`` makes every transaction of its connections read-only in the server
    (``default_transaction_read_only``), so a read-only store cannot write even by a path that forgot to ask.
    """
    psycopg, psycopg_pool = psycopg_modules()
    from pgvector.psycopg import register_vector

    def configure(conn: Any) -> None:
        try:
            register_vector(conn)
        except psycopg.ProgrammingError:  # the extension is created by the first migration
            pass
        if target.bound_user is not None:
            conn.execute("SELECT set_config('omnimem.tenant', %s, false)", (target.bound_user,))
        if read_only:
            conn.execute("SELECT set_config('default_transaction_read_only', 'on', false)")
        conn.commit()
        conn.autocommit = True  # a read is one round trip; writes open their transaction explicitly

    try:  # one connection first: a wrong URL fails here with the server's reason, not after a pool timeout
        probe = psycopg.connect(target.dsn, connect_timeout=10)
    except psycopg.Error as exc:
        raise StoreError(f"cannot connect to PostgreSQL at {target.shown}: {_first_line(exc)}; check the URL "
                         "(postgresql://user:pw@host:5432/db) and that the server is running") from None
    probe.close()
    pool = psycopg_pool.ConnectionPool(target.dsn, min_size=1, max_size=max_size, timeout=timeout,
                                       configure=configure, open=False)
    pool.open(wait=True, timeout=timeout)
    return pool


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def describe(exc: BaseException) -> str:
    return _first_line(exc)
