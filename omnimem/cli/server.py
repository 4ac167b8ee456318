"""``omnimem serve`` and ``omnimem keys``: the HTTP server and its API keys.

:func:`register` adds them to the CLI's typer app (``omnimem.cli.commands`` calls it);
this module does not import ``omnimem.cli.commands``, so the import graph stays a tree.
Errors print one line and exit 2 (bad input) or 1, as everywhere in the CLI.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.table import Column, Table

from omnimem.cli.common import InitOpt, errors as _errors, existing_store as _existing_store, fail as _fail, \
    print_json as _print_json

if TYPE_CHECKING:
    from omnimem.store.base import Store

StoreOpt = Annotated[
    Path | None,
    typer.Option("--store", "-s", help="Store folder (default: $OMNIMEM_STORE, config 'store', ./omnimem-data)."),
]
UrlOpt = Annotated[str | None, typer.Option("--url", help="A PostgreSQL store (postgresql://...) instead of --store.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]
EmbedderOpt = Annotated[str | None, typer.Option("--embedder", help="Embedder for a new store (e.g. all-MiniLM-L6-v2).")]
out = Console()

keys_app = typer.Typer(help="API keys of the HTTP server (stored hashed in the store).", no_args_is_help=True)


def register(app: typer.Typer) -> None:
    """Add ``serve`` and ``keys`` to the CLI."""
    app.command()(serve)
    app.add_typer(keys_app, name="keys")


@contextmanager
def _key_store(store: Path | None, url: str | None, init: bool | None = None) -> Iterator[Store]:
    """The unit store holding the keys; a folder is opened without loading any model (``init``: ``--init``,
    which creates a new one; None: the command has no ``--init``)."""
    if url is not None:
        from omnimem.memory import LocalMemory

        with LocalMemory(url=url) as mem:
            yield mem.store
        return
    from omnimem.store.sqlite.store import SQLiteStore

    opened = SQLiteStore(_existing_store(store, init=init))  # keys belong to a store: a typo creates none
    try:
        yield opened
    finally:
        opened.close()


def serve(
    store: StoreOpt = None,
    url: UrlOpt = None,
    host: Annotated[str, typer.Option(help="Interface to listen on (TLS: put a reverse proxy in front).")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="TCP port.")] = 8420,
    no_auth: Annotated[bool, typer.Option("--no-auth", help="No API keys: every request is a store-wide admin "
                                                            "(loopback hosts only).")] = False,
    workers: Annotated[int, typer.Option(help="uvicorn worker processes sharing the store.")] = 1,
    rate_limit: Annotated[float, typer.Option(help="Requests per second per key (0: no limit).")] = 50.0,
    burst: Annotated[int, typer.Option(help="Requests a key may send at once before the rate applies.")] = 100,
    max_body: Annotated[int, typer.Option(help="Largest JSON body in bytes (413 beyond).")] = 16 * 1024 * 1024,
    max_upload: Annotated[int, typer.Option(help="Largest upload or import in bytes (413 beyond).")] = 256 * 1024 * 1024,
    embedder: EmbedderOpt = None,
    init: InitOpt = False,
    graph: Annotated[bool, typer.Option("--graph", help="Build the knowledge graph on writes and serve it (the "
                                                       "console's Graph tab, /v1/entities).")] = False,
    allowed_host: Annotated[list[str] | None, typer.Option(
        "--allowed-host", help="A Host name to answer for besides the loopback names (repeatable; '*': any, "
                               "not with --no-auth). Other Hosts get 403 (DNS rebinding).")] = None,
    forwarded_allow_ips: Annotated[str | None, typer.Option(
        "--forwarded-allow-ips", help="Comma-separated proxy addresses whose X-Forwarded-For/-Proto are trusted "
                                      "(default: none; clients' own headers are ignored).")] = None,
    public_metrics: Annotated[bool, typer.Option("--public-metrics", help="Serve /metrics without a key "
                                                                          "(default: an admin key).")] = False,
    body_timeout: Annotated[float, typer.Option(help="Seconds a request body may take to arrive (408 and the "
                                                     "connection closed beyond; 0: no limit).")] = 60.0,
    header_timeout: Annotated[float, typer.Option(help="Seconds a request's head (request line and headers) may "
                                                       "take to arrive (408 and the connection closed beyond; "
                                                       "0: no limit).")] = 10.0,
    search_concurrency: Annotated[int | None, typer.Option(
        help="Searches served at once (others wait their turn; adds never wait for these slots; 0: only "
             "the thread pool's limit). Default: the CPU count, at least 2.")] = None,
    log_probes: Annotated[bool, typer.Option(
        "--log-probes", help="Also log GET /readyz and /healthz in the access log (left out by default: probes "
                             "poll them).")] = False,
) -> None:
    """Serve the HTTP API (docs/http-api.md) with uvicorn until interrupted (--init: on a new store)."""
    try:
        from omnimem.server.serve import ServeOptions
        from omnimem.server.serve import serve as run
        import uvicorn  # noqa: F401  (checked here: a missing one is one line, not a traceback)
    except ImportError as exc:
        _fail(_missing_server(exc), 1)
    if url is None:  # serving a mistyped path would create an empty store and answer from it
        store = _existing_store(store, init=init)
    if graph:  # the setting every worker process reads (they inherit the environment)
        os.environ["OMNIMEM_GRAPH"] = "true"
    options = ServeOptions(store=str(store) if store is not None else None, url=url, host=host, port=port,
                           auth=not no_auth, workers=workers, rate=rate_limit, burst=burst, max_body=max_body,
                           max_upload=max_upload, embedder=embedder, allowed_hosts=tuple(allowed_host or ()),
                           forwarded_allow_ips=forwarded_allow_ips, public_metrics=public_metrics,
                           body_timeout=body_timeout, header_timeout=header_timeout, log_probes=log_probes,
                           **({"search_concurrency": search_concurrency} if search_concurrency is not None else {}))
    with _errors():
        options.check()
        _check_port_free(host, port)
        run(options)


def _missing_server(exc: ImportError) -> str:
    """The one line for a missing ``server`` extra (MissingDependencyError's own words, else the same ones)."""
    from omnimem.errors import OmnimemError

    if isinstance(exc, OmnimemError):
        return str(exc)
    return f"{exc.name or 'a server dependency'} is not installed; install it with: pip install 'omnimem[server]'"


def _check_port_free(host: str, port: int) -> None:
    """Fail in one line (exit 1) when ``host:port`` cannot be bound, before the store and the model load."""
    import socket

    if port == 0:
        return
    family = socket.AF_INET6 if ":" in host else socket.AF_INET  # the family uvicorn binds for this host
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        if os.name != "nt":  # as uvicorn binds: a port left in TIME_WAIT is free
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except socket.gaierror as exc:
            _fail(f"cannot listen on {host}: {exc.strerror}", 2)
        except PermissionError:
            _fail(f"port {port} needs more privileges than this user has; pick a port above 1023", 1)
        except OSError:
            _fail(f"port {port} is in use (on {host}); stop what listens there or pick another with --port", 1)


@keys_app.command("create")
def keys_create(
    name: Annotated[str, typer.Option("--name", help="A name for the key (the audit log shows key:<name>).")],
    role: Annotated[str, typer.Option("--role", help="read | write | admin")],
    user_id: Annotated[str | None, typer.Option("--user-id", help="The user the key acts for (omit: store-wide "
                                                                  "admin).")] = None,
    agent_id: Annotated[str | None, typer.Option("--agent-id", help="Also bind the key to this agent.")] = None,
    store: StoreOpt = None,
    url: UrlOpt = None,
    init: InitOpt = False,
    as_json: JsonOpt = False,
    max_trust: Annotated[str, typer.Option("--max-trust", help="trusted | untrusted: the highest trust the key's "
                                                               "writes may have (docs/security.md).")] = "trusted",
) -> None:
    """Create a key and print it once (only its hash is stored); --init: in a new store, before serving it."""
    from omnimem.store.apikeys import create_key

    with _errors(), _key_store(store, url, init) as keys:
        key, record = create_key(keys, name=name, role=role, user_id=user_id, agent_id=agent_id, max_trust=max_trust)
    if as_json:
        _print_json({"api_key": key, **record.to_dict()})
    else:
        out.print(key, markup=False, highlight=False)
        limit = "" if record.max_trust == "trusted" else f", writes at most {record.max_trust}"
        typer.echo(f"key {record.key_id} ({record.role}{limit}) created; it is shown only this once", err=True)


@keys_app.command("list")
def keys_list(store: StoreOpt = None, url: UrlOpt = None, as_json: JsonOpt = False) -> None:
    """Every key (revoked ones too), without secrets."""
    with _errors(), _key_store(store, url) as keys:
        records = keys.list_keys()
    if as_json:
        _print_json([r.to_dict() for r in records])
        return
    table = Table("name", "role", "user", "agent", "created", "revoked")
    table.columns.insert(0, Column("key id", no_wrap=True, min_width=max((len(r.key_id) for r in records), default=6)))
    for column in table.columns[1:]:  # narrow terminals fold these; a key id is never cut (it is typed back)
        column.overflow = "fold"
    for r in records:
        table.add_row(r.key_id, r.name, r.role, r.user_id or "*", r.agent_id or "*",
                      f"{r.created_at:%Y-%m-%d %H:%M}", f"{r.revoked_at:%Y-%m-%d %H:%M}" if r.revoked_at else "")
    out.print(table)


@keys_app.command("revoke")
def keys_revoke(key_id: Annotated[str, typer.Argument(help="The key id (from keys list).")],
                store: StoreOpt = None, url: UrlOpt = None) -> None:
    """Revoke a key: it and its console sessions stop working at once."""
    with _errors(), _key_store(store, url) as keys:
        found = keys.revoke_key(key_id)
    if not found:
        _fail(f"no active key {key_id!r}; see omnimem keys list")
    out.print(f"revoked {key_id}")
