"""The ``omnimem`` command line: :mod:`.commands` (the typer app) and its command groups.

- :mod:`.common`: store paths, one-line errors, JSON output; :mod:`.server`: ``serve``, ``keys``;
- :mod:`.postgres`: ``migrate``; :mod:`.queue`: ``worker``, ``queue``; :mod:`.mcp`: ``mcp`` on stdio.

A face: this module only re-exports what the pyproject script (``omnimem.cli:main``) and the
cold-start benchmark name; ``python -m omnimem.cli`` runs :mod:`.__main__`.
"""

from omnimem.cli.commands import _memory, _print_context, _reader, app, main

__all__ = ["_memory", "_print_context", "_reader", "app", "main"]
