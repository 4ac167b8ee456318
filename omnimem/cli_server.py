"""``omnimem serve`` and ``omnimem keys``: the HTTP server and its API keys (registered on ``omnimem.cli.app``)."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from omnimem.cli import EmbedderOpt, JsonOpt, StoreOpt, _errors, _fail, _memory, _print_json, app, out

UrlOpt = Annotated[str | None, typer.Option("--url", help="A PostgreSQL store (postgresql://...) instead of --store.")]

keys_app = typer.Typer(help="API keys of the HTTP server (stored hashed in the store).", no_args_is_help=True)
app.add_typer(keys_app, name="keys")


@app.command()
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
) -> None:
    """Serve the HTTP API (docs/http-api.md) with uvicorn until interrupted."""
    from omnimem.server.serve import ServeOptions
    from omnimem.server.serve import serve as run

    if store is None and url is None:
        from omnimem.cli import _store_path

        store = _store_path(None)
    options = ServeOptions(store=str(store) if store is not None else None, url=url, host=host, port=port,
                           auth=not no_auth, workers=workers, rate=rate_limit, burst=burst, max_body=max_body,
                           max_upload=max_upload, embedder=embedder)
    with _errors():
        run(options)


def _key_memory(store: StoreOpt, url: str | None):  # type: ignore[no-untyped-def]
    if url is not None:
        from omnimem.memory import Memory

        return Memory(url=url)
    return _memory(store)


@keys_app.command("create")
def keys_create(
    name: Annotated[str, typer.Option("--name", help="A name for the key (the audit log shows key:<name>).")],
    role: Annotated[str, typer.Option("--role", help="read | write | admin")],
    user_id: Annotated[str | None, typer.Option("--user-id", help="The user the key acts for (omit: store-wide "
                                                                  "admin).")] = None,
    agent_id: Annotated[str | None, typer.Option("--agent-id", help="Also bind the key to this agent.")] = None,
    store: StoreOpt = None,
    url: UrlOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Create a key and print it once (only its hash is stored)."""
    from omnimem.apikeys import create_key

    with _errors(), _key_memory(store, url) as mem:
        key, record = create_key(mem.store, name=name, role=role, user_id=user_id, agent_id=agent_id)
    if as_json:
        _print_json({"api_key": key, **record.to_dict()})
    else:
        out.print(key, markup=False, highlight=False)
        typer.echo(f"key {record.key_id} ({record.role}) created; it is shown only this once", err=True)


@keys_app.command("list")
def keys_list(store: StoreOpt = None, url: UrlOpt = None, as_json: JsonOpt = False) -> None:
    """Every key (revoked ones too), without secrets."""
    with _errors(), _key_memory(store, url) as mem:
        records = mem.store.list_keys()
    if as_json:
        _print_json([r.to_dict() for r in records])
        return
    table = Table("key id", "name", "role", "user", "agent", "created", "revoked")
    for r in records:
        table.add_row(r.key_id, r.name, r.role, r.user_id or "*", r.agent_id or "*",
                      f"{r.created_at:%Y-%m-%d %H:%M}", f"{r.revoked_at:%Y-%m-%d %H:%M}" if r.revoked_at else "")
    out.print(table)


@keys_app.command("revoke")
def keys_revoke(key_id: Annotated[str, typer.Argument(help="The key id (from keys list).")],
                store: StoreOpt = None, url: UrlOpt = None) -> None:
    """Revoke a key: it and its console sessions stop working at once."""
    with _errors(), _key_memory(store, url) as mem:
        found = mem.store.revoke_key(key_id)
    if not found:
        _fail(f"no active key {key_id!r}; see omnimem keys list")
    out.print(f"revoked {key_id}")
