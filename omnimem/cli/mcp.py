"""``omnimem mcp``: the MCP server on stdio, for an agent that starts it as a subprocess.

Registered on the CLI's typer app by :mod:`omnimem.cli.commands` (``app.command("mcp")(mcp_command)``);
this module does not import the CLI, so the import graph stays a tree. stdout
carries the MCP protocol: everything else (errors, logs) goes to stderr.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from omnimem.cli.common import InitOpt, existing_store as _existing_store, fail as _fail
from omnimem.errors import OmnimemError


def mcp_command(
    store: Annotated[Path | None, typer.Option(
        "--store", "-s", help="Store folder (default: $OMNIMEM_STORE, config 'store', ./omnimem-data).")] = None,
    url: Annotated[str | None, typer.Option(
        "--url", help="A PostgreSQL database instead of a folder: postgresql://user:pw@host:5432/db (needs "
                      "pip install 'omnimem[postgres]').")] = None,
    embedder: Annotated[str | None, typer.Option("--embedder", help="Embedder for a new store (with --init).")] = None,
    init: InitOpt = False,
) -> None:
    """Serve the store to an MCP client over stdio (tools: add, add_dialogue, search, recent, ask, get, update,
    delete, forget, history; with the knowledge graph on (OMNIMEM_GRAPH=true) also entities, neighbors; resource
    omnimem://units/{id}/raw). Every call acts as you, the store's owner. --init: create the store if there is
    none yet (stdout stays the protocol: the line saying so goes to stderr)."""
    from omnimem.memory import LocalMemory

    if store is not None and url is not None:
        _fail("pass either --store or --url, not both")
    try:
        from omnimem.mcp.server import create_mcp
    except ImportError:
        _fail("the MCP server needs fastmcp; install it with: pip install 'omnimem[mcp]'")
    try:
        memory = LocalMemory(url=url, embedder=embedder) if url is not None else \
            LocalMemory(_existing_store(store, init=init), embedder=embedder)
    except OmnimemError as exc:
        _fail(str(exc), 2 if exc.status < 500 else 1)
    with memory:
        create_mcp(memory).run(transport="stdio", show_banner=False)
