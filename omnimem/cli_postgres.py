"""``omnimem migrate``: bring a PostgreSQL database to this omnimem's schema.

Registered on the CLI app by :func:`register` (``omnimem.cli`` calls it), so
this module does not import the CLI back.
"""

from __future__ import annotations

import json
import sys
from typing import Annotated

import typer

from omnimem.cli_common import fail as _fail
from omnimem.errors import OmnimemError


def migrate(
    url: Annotated[str | None, typer.Option("--url", help="postgresql://user:pw@host:5432/db (default: the global "
                                            "--url, $OMNIMEM_URL, config 'url').")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of text.")] = False,
) -> None:
    """Apply the named schema migrations a PostgreSQL database lacks (each in its own transaction)."""
    from omnimem.config import Settings

    try:
        target = url or Settings.load().url
        if not target:
            _fail("migrate needs a database: pass --url postgresql://user:pw@host:5432/db (or set OMNIMEM_URL)", 2)
        applied, before, shown = _apply(str(target))
    except OmnimemError as exc:
        _fail(str(exc), 2 if exc.status < 500 else 1)
    from omnimem.store.postgres.schema import SCHEMA_VERSION

    if as_json:
        sys.stdout.write(json.dumps({"database": shown, "from": before, "to": SCHEMA_VERSION,
                                     "applied": [{"number": n, "name": name} for n, name in applied]}, indent=2) + "\n")
        return
    for number, name in applied:
        typer.echo(f"applied {number}: {name}")
    typer.echo(f"{shown}: schema {SCHEMA_VERSION}" + ("" if applied else " (already up to date)"))


def _apply(url: str) -> tuple[list[tuple[int, str]], int, str]:
    from omnimem.errors import StoreError
    from omnimem.store.postgres.connect import describe, parse_url, psycopg_modules
    from omnimem.store.postgres.migrate import current_version, migrate as run

    where = parse_url(url)
    psycopg, _ = psycopg_modules()
    try:
        conn = psycopg.connect(where.dsn, connect_timeout=10)
    except psycopg.Error as exc:
        raise StoreError(f"cannot connect to PostgreSQL at {where.shown}: {describe(exc)}; check the URL and that "
                         "the server is running") from None
    try:
        before = current_version(conn)
        conn.rollback()
        return run(conn), before, where.shown
    finally:
        conn.close()


def register(app: typer.Typer) -> None:
    """Add ``migrate`` to the ``omnimem`` app."""
    app.command()(migrate)
