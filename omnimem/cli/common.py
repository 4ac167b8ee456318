"""What every CLI module shares: one-line errors, flags in messages, JSON and readable output, the store folder.

``omnimem.cli.commands`` and the modules that register commands on it (``server``,
``queue``, ``postgres``, ``mcp``) import these from here;
none of them imports ``omnimem.cli.commands`` (that would be an import cycle).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer
from rich.text import Text
from typer.core import TyperGroup, TyperOption

from omnimem.errors import OmnimemError


def fail(message: str, code: int = 2) -> NoReturn:
    """Print one line and exit: 2 when the input is wrong, 1 when omnimem or the store failed."""
    typer.echo(f"error: {' '.join(message.split())}", err=True)
    raise typer.Exit(code)


# the library's messages name Python arguments; on the command line they are flags
_FLAGS = (("all_users=True", "--all-users"), ("all=True", "--all"),
          ("name a user_id or agent_id", "name --user-id or --agent-id"), ("unit_ids must", "--unit must"),
          (", or pass llm=)", ", or the [llm] table of the config file)"))


def cli_words(message: str) -> str:
    """A library message as the CLI says it: ``--all`` where the library says ``all=True``."""
    for python, flag in _FLAGS:
        message = message.replace(python, flag)
    return message


@contextmanager
def errors() -> Iterator[None]:
    """Turn an ``OmnimemError`` into one line and its exit code."""
    try:
        yield
    except OmnimemError as exc:
        fail(cli_words(str(exc)), 2 if exc.status < 500 else 1)


REFUSE_WITH_ONE = frozenset({"hook"})  # commands agents run, which read exit 2 as "block" (docs/claude-code.md)


class OneLineErrors(TyperGroup):
    """The CLI's root command: a usage error (a missing option, a bad value) is one line and exit 2, as
    every other error; and ``--help`` shows no type for a flag and the element type for a repeatable option
    (not ``<bool>``, ``<list[str]>``)."""

    def main(self, args: Sequence[str] | None = None, prog_name: str | None = None, complete_var: str | None = None,
             standalone_mode: bool = True, windows_expand_args: bool = True, **extra: Any) -> Any:
        _tidy_metavars(self)
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, False, windows_expand_args, **extra)
        try:
            code = super().main(args, prog_name, complete_var, False, windows_expand_args, **extra)
        except typer.TyperException as exc:  # typer's usage errors (its own copy of click's)
            message = exc.format_message()
            if type(exc).__name__ == "NoArgsIsHelpError":  # a group run without a command: its help, as before
                if message.strip():  # (typer's rich help has printed itself already)
                    typer.echo(message, err=True)
                sys.exit(exc.exit_code)
            ctx = getattr(exc, "ctx", None)
            where = f"; see `{ctx.command_path} --help`" if ctx is not None else ""
            said = ' '.join(message.split()).rstrip('.')
            typer.echo(f"error: {said} (see `{ctx.command_path} --help`)" if ctx is not None and said.endswith("?")
                       else f"error: {said}{where}", err=True)  # "Did you mean 'search'?" takes no "; see"
            command = getattr(getattr(ctx, "command", None), "name", None)
            sys.exit(1 if command in REFUSE_WITH_ONE and exc.exit_code == 2 else exc.exit_code)
        except typer.Abort:
            typer.echo("aborted", err=True)
            sys.exit(1)
        sys.exit(code if isinstance(code, int) else 0)  # a command's typer.Exit(n) comes back as n


def counted(n: int, noun: str) -> str:
    """``1 turn``, ``2 turns``: a count with its noun, singular for one."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=2) + "\n")


def store_path(store: Path | None) -> Path:
    """``--store``, else $OMNIMEM_STORE / config ``store``, else ``./omnimem-data``."""
    if store is not None:
        return store
    from omnimem.config import Settings

    configured = Settings.load().store
    return Path(configured) if configured else Path("omnimem-data")


def scope_words(user_id: str | None, agent_id: str | None, session_id: str | None) -> str:
    """``for user 'ann', session 's1'``: the scope a command looked in, as a user typed it."""
    named = [f"{what} {value!r}" for what, value in (("user", user_id), ("agent", agent_id),
                                                       ("session", session_id)) if value is not None]
    return "for " + ", ".join(named) if named else "in this store"


def readable(value: Any) -> Text:
    """One value of ``stats`` as a person reads it: counts as integers, a mapping as ``name n, name n``."""
    if isinstance(value, dict):
        return Text(", ".join(f"{k} {readable(v)}" for k, v in value.items()) or "none")
    if isinstance(value, float):
        return Text(str(int(value)) if value.is_integer() else f"{value:.4g}")
    return Text("none" if value is None else str(value))


HELP_NAMES = ["-h", "--help"]


def _tidy_metavars(command: Any) -> None:
    ctx = typer.Context(command, help_option_names=HELP_NAMES)
    help_option = command.get_help_option(ctx)  # created once per command (with -h), then cached
    for param in [*command.params, *([help_option] if help_option is not None else [])]:
        if isinstance(param, TyperOption) and param.metavar is None:
            if param.is_flag:
                param.metavar = ""
            elif param.multiple:  # "<list[str]>": one value per use of the option, which its help says
                shown = param.display_type(ctx)
                param.metavar = shown.replace("<list[", "<").replace("]>", ">")
    for sub in getattr(command, "commands", {}).values():
        _tidy_metavars(sub)


def existing_store(store: Path | None, *, init: bool | None = None) -> Path:
    """The store folder of a command that must not create one by accident: a path that holds none fails in one
    line, unless the command was given ``--init`` (``init=True``), which creates it (and says so on stderr).

    ``init=None``: the command has no ``--init`` (only ``ingest``, ``add*`` and ``import`` create a store
    without it); anything else on a mistyped ``--store`` would otherwise serve or list a new, empty one.
    """
    from omnimem.memory import Memory

    path = store_path(store)
    if Memory.exists(path):
        return path
    if init:
        create_store(path)
        return path
    hint = ("add --init to create one" if init is not None else
            "check --store (or OMNIMEM_STORE), or create one with `omnimem add` or `omnimem ingest`")
    fail(f"{path} holds no omnimem store ({hint})", 2)


def create_store(path: Path) -> None:
    """Create an empty store folder (no model loaded: the first open records the embedder) and name it on
    stderr (stdout may be a protocol, as for ``omnimem mcp``)."""
    from omnimem.store.sqlite.store import SQLiteStore

    with errors():
        SQLiteStore(path).close()
    typer.echo(f"created a new omnimem store in {path.resolve()}", err=True)


InitOpt = Annotated[bool, typer.Option("--init", help="Create the store if --store holds none yet (else a "
                                                       "path without a store is an error).")]
