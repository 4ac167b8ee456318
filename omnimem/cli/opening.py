"""How a CLI command opens its store: ``--store`` or ``--url`` (else ``$OMNIMEM_URL``), the options every
command shares, the consoles and the progress bar; :mod:`.commands`, :mod:`.records` and :mod:`.graph` use it."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console

from omnimem.cli.common import existing_store as _existing_store, fail as _fail, store_path as _store_path

if TYPE_CHECKING:
    from rich.progress import Progress

    from omnimem.embed.base import Embedder
    from omnimem.memory import LocalMemory

out = Console()
err = Console(stderr=True)

StoreOpt = Annotated[
    Path | None,
    typer.Option("--store", "-s", help="Store folder (default: $OMNIMEM_STORE, config 'store', ./omnimem-data)."),
]
UserOpt = Annotated[str | None, typer.Option("--user-id", help="Scope: user id.")]
AgentOpt = Annotated[str | None, typer.Option("--agent-id", help="Scope: agent id.")]
SessionOpt = Annotated[str | None, typer.Option("--session-id", help="Scope: session id.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]
EmbedderOpt = Annotated[str | None, typer.Option("--embedder", help="Embedder for a new store (e.g. all-MiniLM-L6-v2).")]
UrlOpt = Annotated[str | None, typer.Option(
    "--url", help="A PostgreSQL database instead of --store: postgresql://user:pw@host:5432/db, or "
    "postgresql+pgserver://./pgdata for a local one (omnimem pg-start).")]


@contextmanager
def _memory(
    store: Path | None, embedder: str | Embedder | None = None, *, existing: bool = False, url: str | None = None,
    **settings: Any,
) -> Iterator[LocalMemory]:
    """The store at ``--store`` (or the database of ``url``, else the global ``--url`` / $OMNIMEM_URL when
    there is no ``--store``); with ``existing``, a path that holds none fails instead of becoming one. What the
    command writes through it arrives over ``cli`` (its units' surface)."""
    from omnimem.contract.caller import writing_via

    with writing_via("cli"):
        yield from _opened(store, embedder, existing, url, settings)


def _opened(store: Path | None, embedder: str | Embedder | None, existing: bool, url: str | None,
            settings: dict[str, Any]) -> Iterator[LocalMemory]:
    from omnimem.memory import LocalMemory

    if store is not None and url is not None:
        _fail("pass either --store or --url, not both", 2)
    url = url or (_database_url() if store is None else None)
    if url is not None:  # --url, $OMNIMEM_URL or config 'url': a PostgreSQL database instead of a folder
        with LocalMemory(url=url, embedder=embedder, **settings) as mem:
            yield mem
        return
    path = _existing_store(store) if existing else _store_path(store)
    with LocalMemory(path, embedder=embedder, **settings) as mem:
        yield mem
        if mem.settings.enrich == "async" and mem.store.last_write_seq:  # a one-shot process: finish the
            mem.flush()  # enrichment of what it stored (enrich=off leaves it to `omnimem worker`)


def _database_url() -> str | None:
    """``$OMNIMEM_URL`` (which the global ``--url`` sets) or the config file's ``url``."""
    from omnimem.config import Settings

    return Settings.load().url


def _target(store: Path | None, url: str | None) -> tuple[Path | None, str | None]:
    """(folder, database URL) a command opens: ``--url``, else the global one unless ``--store`` is given."""
    if store is not None and url is not None:
        _fail("pass either --store or --url, not both", 2)
    url = url or (_database_url() if store is None else None)
    return (None, url) if url is not None else (_store_path(store), None)


@contextmanager
def _reader(store: Path | None, url: str | None = None) -> Iterator[LocalMemory]:
    """The store for a command that only reads and embeds queries (``search``, ``ask``).

    A store built with the torch MiniLM, folder or database, is opened read-only
    with the int8 ONNX MiniLM embedding the query (:mod:`omnimem.cli.oneshot`),
    which spares the command seconds of importing torch.
    """
    from omnimem.config import Settings
    from omnimem.cli.oneshot import read_only_query_embedder

    fast = read_only_query_embedder(*_target(store, url), Settings.load().embedder)
    with _memory(store, fast, existing=True, url=url, **({"read_only": True} if fast else {})) as mem:
        yield mem


def _writer_embedder(store: Path | None, url: str | None = None, *, texts: int = 1,
                     chosen: str | None = None) -> Embedder | None:
    """For a command that embeds a few texts: the numpy MiniLM when the store is a MiniLM one (no torch);
    ``chosen``: the command's ``--embedder`` (else the configured one)."""
    from omnimem.config import Settings
    from omnimem.cli.oneshot import write_embedder

    return write_embedder(*_target(store, url), chosen or Settings.load().embedder, texts)


def _where(mem: LocalMemory) -> str:
    """The store's folder, or its database URL without the password."""
    if mem.path is not None:
        return str(mem.path)
    shown = getattr(mem.store, "url", None)  # a database store's URL is kept without its password
    if shown:
        return str(shown)
    if mem.url:
        from urllib.parse import urlsplit, urlunsplit

        parts = urlsplit(mem.url)
        return urlunsplit((parts.scheme, parts.hostname or "", parts.path, "", ""))
    return ":memory:"


def _bar(as_json: bool) -> Progress:
    """A progress bar on stderr (none under --json); transient, so an error after it stays one line."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    return Progress(*columns, console=err, disable=as_json, transient=True)
