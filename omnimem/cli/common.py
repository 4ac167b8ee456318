"""What every CLI module shares: one-line errors, JSON output and the default store folder.

``omnimem.cli.commands`` and the modules that register commands on it (``server``,
``queue``, ``postgres``, ``mcp``) import these from here;
none of them imports ``omnimem.cli.commands`` (that would be an import cycle).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NoReturn

import typer

from omnimem.errors import OmnimemError


def fail(message: str, code: int = 2) -> NoReturn:
    """Print one line and exit: 2 when the input is wrong, 1 when omnimem or the store failed."""
    typer.echo(f"error: {' '.join(message.split())}", err=True)
    raise typer.Exit(code)


@contextmanager
def errors() -> Iterator[None]:
    """Turn an ``OmnimemError`` into one line and its exit code."""
    try:
        yield
    except OmnimemError as exc:
        fail(str(exc), 2 if exc.status < 500 else 1)


def print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=2) + "\n")


def store_path(store: Path | None) -> Path:
    """``--store``, else $OMNIMEM_STORE / config ``store``, else ``./omnimem-data``."""
    if store is not None:
        return store
    from omnimem.config import Settings

    configured = Settings.load().store
    return Path(configured) if configured else Path("omnimem-data")
