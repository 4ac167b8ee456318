"""The benchmark commands, one typer app: ``python -m benchmarks <command>``.

The commands come from the groups (``benchmarks/<group>/commands.py``), each under its own panel of
``python -m benchmarks --help``: retrieval, speed, serving, reliability, PostgreSQL, media.
``register`` adds them to any typer app; ``omnimem bench`` mounts them through :func:`build_app` when
this package is importable (a source checkout). ``locomo``, ``memgallery``, ``longmemeval`` and ``perf``
are typer commands; the others are scripts with their own argparse options, passed through unchanged
(``python -m benchmarks media --help`` shows them).
"""

from __future__ import annotations

import typer

from benchmarks.media import commands as media
from benchmarks.postgres import commands as postgres
from benchmarks.reliability import commands as reliability
from benchmarks.retrieval import commands as retrieval
from benchmarks.serving import commands as serving
from benchmarks.speed import commands as speed

GROUPS = (retrieval, speed, serving, reliability, postgres, media)  # the order of the help's panels
SCRIPTS = {name: script for group in GROUPS for name, script in group.SCRIPTS.items()}  # every script command


def register(app: typer.Typer) -> None:
    """Add every benchmark command to ``app``, group by group."""
    for group in GROUPS:
        group.register(app)


def build_app() -> typer.Typer:
    app = typer.Typer(help="omnimem benchmarks, by group: retrieval quality (LoCoMo, LongMemEval, Mem-Gallery), "
                      "speed, serving, reliability, PostgreSQL, media. Run from the repository root.",
                      no_args_is_help=True, add_completion=False)
    register(app)
    return app


def main() -> None:
    build_app()(prog_name="python -m benchmarks")
