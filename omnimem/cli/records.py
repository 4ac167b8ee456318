"""``omnimem log``, ``omnimem export`` and ``omnimem import``: the audit log and a scope's records as JSON Lines.

:mod:`.commands` calls :func:`register` with its app.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer

from omnimem.cli.common import counted, errors as _errors, print_json as _print_json
from omnimem.cli.opening import AgentOpt, JsonOpt, SessionOpt, StoreOpt, UserOpt, _bar, _memory, \
    _writer_embedder, out


def register(app: typer.Typer) -> None:
    app.command("log")(show_log)
    app.command("export")(export_cmd)
    app.command("import")(import_cmd)


def show_log(
    user_id: UserOpt = None,
    agent_id: AgentOpt = None,
    session_id: SessionOpt = None,
    limit: Annotated[int | None, typer.Option(help="Only the last N events.")] = None,
    store: StoreOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """The append-only audit log (who changed what, when and why)."""
    with _errors(), _memory(store, existing=True) as mem:
        events = mem.log(user_id=user_id, agent_id=agent_id, session_id=session_id, limit=limit)
    _print_events(events, as_json)


def _print_events(events: list[Any], as_json: bool) -> None:
    if as_json:
        _print_json([e.to_dict() for e in events])
    else:
        for event in events:
            out.print(str(event), markup=False, highlight=False)


def export_cmd(
    user_id: UserOpt = None,
    agent_id: AgentOpt = None,
    session_id: SessionOpt = None,
    all_units: Annotated[bool, typer.Option("--all", help="Export the whole store.")] = False,
    store: StoreOpt = None,
) -> None:
    """Write everything held about a scope as JSON Lines to stdout (a data-access request)."""
    with _errors(), _memory(store, existing=True) as mem:
        for record in mem.export(user_id=user_id, agent_id=agent_id, session_id=session_id, all=all_units):
            sys.stdout.write(json.dumps(record, ensure_ascii=False) + "\n")


def import_cmd(
    file: Annotated[Path, typer.Argument(help="A dump written by omnimem export ('-' for stdin).")],
    allow_forgotten: Annotated[bool, typer.Option("--allow-forgotten", help="Also restore content that was deleted or forgotten here.")] = False,
    fmt: Annotated[str, typer.Option(
        "--format", help="omnimem (a dump of omnimem export) or mem0 (the JSON of mem0's get_all).")] = "omnimem",
    store: StoreOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Load a dump, with a progress bar; every record is validated before anything is stored; forgotten content
    stays forgotten. ``--format mem0`` reads a mem0 export (docs/mem0.md). An import stopped part-way (killed,
    a lost connection) keeps what it stored: run the same import again to complete it (what is stored is
    skipped)."""
    from omnimem.errors import MalformedDataError, StoreError
    from omnimem.contract.loaders import parse_lines

    with _errors():
        if fmt not in ("omnimem", "mem0"):
            raise MalformedDataError(f"unknown import format {fmt!r} (omnimem or mem0)")
        try:
            text = sys.stdin.read() if str(file) == "-" else file.read_text(encoding="utf-8")
        except OSError as exc:  # worded as ingest words it
            raise MalformedDataError(f"cannot read {file}: {exc.strerror or exc}") from None
        except UnicodeDecodeError:
            raise MalformedDataError(f"{file} is not UTF-8 text") from None
        if fmt == "mem0":
            memories = _mem0_json(text, str(file))
            with _memory(store, _writer_embedder(store, texts=len(memories))) as mem, _bar(as_json) as bar:
                task = bar.add_task(f"importing {'stdin' if str(file) == '-' else file.name}", total=len(memories))
                with _rerun_completes(StoreError):
                    summary = mem.import_mem0(memories, allow_forgotten=allow_forgotten,
                                              progress=lambda n: bar.advance(task, n))
            _print_summary(summary, as_json)
            return
        records = parse_lines(text, source=str(file))
        if records and not (isinstance(records[0], dict) and "kind" in records[0]):
            raise MalformedDataError(f"{file} is not an omnimem export (its first record has no \"kind\"); for a "
                                     "mem0 export add --format mem0; conversation turns are read by `omnimem "
                                     "ingest jsonl FILE`")
        units = sum(isinstance(r, dict) and r.get("kind") == "unit" for r in records)
        with _memory(store, _writer_embedder(store, texts=units)) as mem, _bar(as_json) as bar:
            task = bar.add_task(f"importing {'stdin' if str(file) == '-' else file.name}", total=units)
            with _rerun_completes(StoreError):
                summary = mem.import_records(records, allow_forgotten=allow_forgotten,
                                             progress=lambda n: bar.advance(task, n))
    _print_summary(summary, as_json)


@contextmanager
def _rerun_completes(error: type[Exception]) -> Iterator[None]:
    """A write that failed during an import (``error`` itself, not a read-only or a mismatched store) says that
    what was stored stays, and that a rerun stores the rest."""
    try:
        yield
    except error as exc:
        if type(exc) is not error:
            raise
        raise error(f"{exc}; the units stored so far stay: run the same import again to complete it") from None


def _print_summary(summary: dict[str, int], as_json: bool) -> None:
    if as_json:
        _print_json(summary)
    else:
        out.print(f"{counted(summary['units'], 'unit')}: {summary['stored']} stored, {summary['skipped']} skipped "
                  f"({summary['forgotten']} forgotten here; --allow-forgotten restores them)")


def _mem0_json(text: str, source: str) -> list[Any]:
    """The memories of a mem0 export file (one JSON document), or a MalformedDataError naming the file."""
    from omnimem.errors import MalformedDataError
    from omnimem.contract.loaders import memories_of

    try:
        export = json.loads(text)
    except json.JSONDecodeError as exc:
        raise MalformedDataError(f"{source}: not a JSON document ({exc.msg}, line {exc.lineno})") from None
    except RecursionError:
        raise MalformedDataError(f"{source}: nests too deeply to read") from None
    return list(memories_of(export))
