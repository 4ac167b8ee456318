"""``omnimem migrate``: bring a PostgreSQL database to this omnimem's schema (registered on ``omnimem.cli.app``)."""

from __future__ import annotations

from typing import Annotated

import typer

from omnimem.cli import _database_url, _errors, _fail, _print_json, app, out


@app.command()
def migrate(
    url: Annotated[str | None, typer.Option("--url", help="postgresql://user:pw@host:5432/db (default: the global "
                                            "--url, $OMNIMEM_URL, config 'url').")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of text.")] = False,
) -> None:
    """Apply the named schema migrations a PostgreSQL database lacks (each in its own transaction)."""
    target = url or _database_url()
    if not target:
        _fail("migrate needs a database: pass --url postgresql://user:pw@host:5432/db (or set OMNIMEM_URL)")
    with _errors():
        from omnimem.store.postgres.connect import parse_url, psycopg_modules
        from omnimem.store.postgres.migrate import current_version, migrate as run
        from omnimem.store.postgres.schema import SCHEMA_VERSION
        from omnimem.errors import StoreError

        where = parse_url(str(target))
        psycopg, _ = psycopg_modules()
        try:
            conn = psycopg.connect(where.dsn, connect_timeout=10)
        except psycopg.Error as exc:
            raise StoreError(f"cannot connect to PostgreSQL at {where.shown}: {str(exc).strip().splitlines()[0]}; "
                             "check the URL and that the server is running") from None
        try:
            before = current_version(conn)
            conn.rollback()
            applied = run(conn)
        finally:
            conn.close()
        if as_json:
            _print_json({"database": where.shown, "from": before, "to": SCHEMA_VERSION,
                         "applied": [{"number": n, "name": name} for n, name in applied]})
            return
        for number, name in applied:
            out.print(f"applied {number}: {name}")
        out.print(f"{where.shown}: schema {SCHEMA_VERSION}" + ("" if applied else " (already up to date)"))
