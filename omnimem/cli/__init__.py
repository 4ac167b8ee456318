"""The ``omnimem`` command line: :mod:`.commands` (the typer app) and its command groups.

- :mod:`.common`: store paths, one-line errors, JSON output; :mod:`.opening`: how a command opens its store,
  the shared options; :mod:`.server`: ``serve``, ``keys``; :mod:`.records`: ``log``, ``export``, ``import``;
- :mod:`.graph`: ``graph``; :mod:`.postgres`: ``migrate``; :mod:`.queue`: ``worker``, ``queue``;
  :mod:`.mcp`: ``mcp`` on stdio; :mod:`.hits`: what ``search`` prints.

A face: this module only re-exports what the pyproject script (``omnimem.cli:main``) and the
cold-start benchmark name; ``python -m omnimem.cli`` runs :mod:`.__main__`.
"""

from omnimem.cli.commands import app, main
from omnimem.cli.hits import print_context as _print_context
from omnimem.cli.opening import _memory, _reader, _writer_embedder

__all__ = ["_memory", "_print_context", "_reader", "_writer_embedder", "app", "main"]
