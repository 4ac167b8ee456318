"""The plumbing of the benchmark commands: a script benchmark as a command of the typer app.

A script benchmark is a module with ``main(argv)`` and its own argparse options; its command passes
every argument through unchanged (``python -m benchmarks media --help`` shows the module's options),
under its group's panel of ``python -m benchmarks --help``. Each group's ``commands`` module lists its
scripts (command -> module, one-line help) and registers them with :func:`add_scripts`.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping

import typer

PASS_THROUGH = {"allow_extra_args": True, "ignore_unknown_options": True}
Scripts = Mapping[str, tuple[str, str]]  # command -> (module with main(argv), one-line help)


def script_command(app: typer.Typer, name: str, module: str, help_text: str, panel: str) -> None:
    """``name`` runs ``module.main(args)``; a non-zero int it returns is the exit status."""

    @app.command(name, help=help_text, context_settings=PASS_THROUGH, add_help_option=False, rich_help_panel=panel)
    def command(ctx: typer.Context) -> None:
        status = importlib.import_module(module).main(list(ctx.args))
        if isinstance(status, int) and status:
            raise typer.Exit(status)


def add_scripts(app: typer.Typer, scripts: Scripts, panel: str) -> None:
    """Add every script of ``scripts`` to ``app`` under ``panel``."""
    for name, (module, help_text) in scripts.items():
        script_command(app, name, module, help_text, panel)
