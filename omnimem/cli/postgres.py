"""``omnimem migrate``, ``pg-load``, ``pg-start`` and ``pg-stop``: a PostgreSQL database for omnimem.

``migrate`` brings a database to this omnimem's schema, ``pg-load`` fills it
fast, ``pg-start`` / ``pg-stop`` run a local PostgreSQL + pgvector to try it
(:mod:`omnimem.store.postgres.local_server`).

Registered on the CLI app by :func:`register` (``omnimem.cli.commands`` calls it), so
this module does not import the CLI back.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Annotated

import typer

from omnimem.cli.common import fail as _fail
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


def pg_load(
    source: Annotated[Path, typer.Argument(help="The embedded store folder to copy (opened read-only).")],
    url: Annotated[str | None, typer.Option("--url", help="postgresql://user:pw@host:5432/db holding no units yet "
                                            "(default: the global --url, $OMNIMEM_URL, config 'url').")] = None,
    maintenance_work_mem: Annotated[str, typer.Option(
        "--maintenance-work-mem", help="Memory for the HNSW build; about 2GB per million 384-d units "
        "keeps it in memory.")] = "1GB",
    workers: Annotated[int | None, typer.Option("--workers", help="Parallel workers for the index build "
                                                "(max_parallel_maintenance_workers).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of text.")] = False,
) -> None:
    """Copy an embedded store's units (vectors and raw content) into an empty PostgreSQL store with COPY.

    The HNSW index is built once after the load (far faster than growing it unit by unit). Each batch is
    one transaction; if the copy stops half-way, the next writable open builds the index. The graph and the
    audit history are not copied: use omnimem export / import for those.
    """
    from omnimem.config import Settings
    from omnimem.memory import LocalMemory
    from omnimem.store.postgres.bulk import BulkLoader

    try:
        target = url or Settings.load().url
        if not target:
            _fail("pg-load needs a database: pass --url postgresql://user:pw@host:5432/db (or set OMNIMEM_URL)", 2)
        with LocalMemory(source, read_only=True) as src, LocalMemory(url=str(target), embedder=src.embedder) as dst:
            if dst.stats()["units"]:
                _fail("the database already holds units; pg-load fills an empty store (omnimem import merges "
                      "into one)", 2)
            with BulkLoader(dst.store, maintenance_work_mem=maintenance_work_mem,
                            parallel_workers=workers) as load:
                load.copy_from(src.store)
    except OmnimemError as exc:
        _fail(str(exc), 2 if exc.status < 500 else 1)
    report = {"units": load.loaded, "hnsw_build_seconds": round(load.build_seconds or 0.0, 2)}
    if as_json:
        sys.stdout.write(json.dumps(report) + "\n")
    else:
        typer.echo(f"copied {report['units']} units; HNSW index built in {report['hnsw_build_seconds']} s")


DEFAULT_LOCAL = Path("omnimem-pg")


def pg_start(
    folder: Annotated[Path, typer.Argument(help="Data folder of the local server (created on first use).")]
    = DEFAULT_LOCAL,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of text.")] = False,
) -> None:
    """Start a local PostgreSQL 16 + pgvector (pgserver) in FOLDER, or reuse the one running there; print its URL.

    Stdout is only the URL (so `export OMNIMEM_URL=$(omnimem pg-start)` works); every command also takes
    --url postgresql+pgserver://FOLDER, which starts or reuses the same server. For trying, not production:
    local socket, no password. Needs `pip install 'omnimem[pgserver]'`.
    """
    from omnimem.store.postgres import local_server

    shown = str(folder) if folder.is_absolute() or str(folder).startswith(".") else f"./{folder}"
    try:
        url = local_server.start(folder.resolve())
    except OmnimemError as exc:
        _fail(str(exc), 2 if exc.status < 500 else 1)
    if as_json:
        sys.stdout.write(json.dumps({"folder": str(folder), "url": url,
                                     "omnimem_url": f"{local_server.PREFIX}{shown}"}) + "\n")
        return
    typer.echo(url)
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        typer.echo("as root, pgserver opens the folders above the data folder to its 'pgserver' user while it "
                   "starts; their modes were put back as they were (the data folder itself is 700)", err=True)
    typer.echo(f"PostgreSQL + pgvector running in {shown} (stop it with: omnimem pg-stop {shown}); try:\n"
               f"  omnimem --url {local_server.PREFIX}{shown} add \"Ann moved to Lisbon\" --user-id ann\n"
               f"  omnimem --url {local_server.PREFIX}{shown} search \"where does Ann live\" --user-id ann",
               err=True)


def pg_stop(
    folder: Annotated[Path, typer.Argument(help="Data folder of the local server.")] = DEFAULT_LOCAL,
) -> None:
    """Stop the local PostgreSQL that `omnimem pg-start` runs in FOLDER (its data stays)."""
    from omnimem.store.postgres import local_server

    try:
        stopped = local_server.stop(folder.resolve())
    except OmnimemError as exc:
        _fail(str(exc), 2 if exc.status < 500 else 1)
    if not stopped:
        _fail(f"no local PostgreSQL is running in {folder}", 2)
    typer.echo(f"stopped the PostgreSQL in {folder}")


def register(app: typer.Typer) -> None:
    """Add ``migrate``, ``pg-load``, ``pg-start`` and ``pg-stop`` to the ``omnimem`` app."""
    app.command()(migrate)
    app.command("pg-load")(pg_load)
    app.command("pg-start")(pg_start)
    app.command("pg-stop")(pg_stop)
