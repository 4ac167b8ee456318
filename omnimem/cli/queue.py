"""``omnimem worker`` and ``omnimem queue``: run and inspect the enrichment queue of a store.

``cli.py`` calls :func:`register` with its app; this module does not import the CLI (no import
cycle), so it keeps its own small store helper, with the same rules as the CLI's.
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from omnimem.cli.common import errors as _errors, existing_store as _existing_store, fail as _fail, \
    print_json as _print_json

out = Console()
StoreOpt = Annotated[
    Path | None,
    typer.Option("--store", "-s", help="Store folder (default: $OMNIMEM_STORE, config 'store', ./omnimem-data)."),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]


@contextmanager
def _memory(store: Path | None, **settings: Any) -> Iterator[Any]:
    """An existing store (these commands never create one), or the database of ``--url`` / ``$OMNIMEM_URL``."""
    from omnimem.config import Settings
    from omnimem.contract.checks import is_database_url
    from omnimem.memory import LocalMemory

    configured = Settings.load()
    if store is None and is_database_url(configured.url):
        with LocalMemory(url=configured.url, **settings) as mem:
            yield mem
        return
    with LocalMemory(_existing_store(store), **settings) as mem:
        yield mem


def register(app: typer.Typer) -> None:
    """Add ``worker`` and ``queue`` to the CLI."""
    app.command()(worker)
    app.command()(queue)


def worker(
    store: StoreOpt = None,
    threads: Annotated[int, typer.Option("--threads", min=1, max=64, help="Jobs run at once.")] = 1,
    drain: Annotated[bool, typer.Option("--drain", help="Exit once no job this worker can run is left.")] = False,
    graph: Annotated[bool, typer.Option("--graph", help="Also run graph jobs (builds the knowledge graph).")] = False,
) -> None:
    """Run enrichment jobs (LLM restatement and summaries, captions, graph, supersession) until stopped.

    The LLM comes from the usual settings (OMNIMEM_LLM_*, the [llm] table of the config file). Stores
    opened with enrich="off" leave their jobs to this command; any number of workers may run at once.
    """
    stop = threading.Event()
    previous = {sig: signal.signal(sig, lambda *_: stop.set()) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:  # a signal finishes the running job, then exits
        _work(store, threads, drain, graph, stop)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _work(store: Path | None, threads: int, drain: bool, graph: bool, stop: threading.Event) -> None:
    extra: dict[str, Any] = {"graph": True} if graph else {}
    with _errors(), _memory(store, enrich="off", **extra) as mem:
        enricher = mem.enricher
        kinds = enricher.kinds()
        if not kinds:
            _fail("this worker can run no job: configure an LLM (OMNIMEM_LLM_*) or pass --graph", 2)
        out.print(f"worker on {mem.path}: running {', '.join(kinds)} jobs", highlight=False)
        if drain:
            _drain(mem, stop, threads)
            return
        pool = [threading.Thread(target=enricher.run_forever, args=(stop,), daemon=True) for _ in range(threads)]
        for thread in pool:
            thread.start()
        while not stop.is_set():
            stop.wait(0.5)
        for thread in pool:
            thread.join()


def _drain(mem: Any, stop: threading.Event, threads: int) -> None:
    enricher = mem.enricher
    pool = [threading.Thread(target=enricher.run_forever, args=(stop,), daemon=True) for _ in range(threads)]
    for thread in pool:
        thread.start()
    while not stop.is_set():
        depth = mem.store.queue_depth(enricher.kinds())
        if depth["pending"] + depth["running"] == 0:
            break
        time.sleep(0.05)
    stop.set()
    for thread in pool:
        thread.join()
    depth = mem.store.queue_depth()
    out.print(f"queue drained: {depth['failed']} failed job(s) parked", highlight=False)


def queue(
    store: StoreOpt = None,
    failed: Annotated[bool, typer.Option("--failed", help="Only failed jobs (the dead letter).")] = False,
    retry: Annotated[list[int] | None, typer.Option("--retry", help="Put this failed job back (repeatable).")] = None,
    retry_all: Annotated[bool, typer.Option("--retry-all", help="Put every failed job back.")] = False,
    drop: Annotated[list[int] | None, typer.Option("--drop", help="Remove this failed job (repeatable).")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Show the enrichment queue: pending, running and failed jobs, with the reason each failed."""
    with _errors(), _memory(store, enrich="off", llm=False) as mem:
        q = mem.store
        if retry or retry_all or drop:
            parked = {j.id for j in q.jobs("failed")}
            unknown = sorted({*(retry or []), *(drop or [])} - parked)
            if unknown:  # before changing anything: a mistyped id must not pass as done
                _fail(f"no failed job {', '.join(map(str, unknown))}; `omnimem queue --failed` lists them", 2)
            done = {"retried": q.retry(None if retry_all else list(retry or [])) if retry or retry_all else 0,
                    "dropped": q.drop(list(drop)) if drop else 0}
            _print_json(done) if as_json else out.print(
                f"retried {done['retried']}, dropped {done['dropped']} failed job(s)", highlight=False)
            return
        jobs = q.jobs("failed" if failed else None)
        depth = q.queue_depth()
    if as_json:
        _print_json({"depth": depth, "jobs": [j.to_dict() for j in jobs]})
        return
    out.print(f"pending {depth['pending']}, running {depth['running']}, failed {depth['failed']}", highlight=False)
    if not jobs:
        return
    table = Table("id", "kind", "state", "tries", "next / lease", "worker", "error")
    for j in jobs:
        when = j.lease_until if j.state == "running" else (j.run_after if j.state == "pending" else None)
        stamp = datetime.fromtimestamp(when, timezone.utc).strftime("%H:%M:%S") if when else ""
        table.add_row(str(j.id), j.kind, j.state, str(j.attempts), stamp, j.worker or "", (j.last_error or "")[:80])
    out.print(table)
