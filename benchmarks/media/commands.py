"""The media group's commands (mounted by :mod:`benchmarks.cli` through :func:`register`)."""

from __future__ import annotations

import typer

from benchmarks.harness.commands import add_scripts

PANEL = "Media"
SCRIPTS = {
    "media": ("benchmarks.media.media_bench", "Media filters against known ground truth: scene cuts, VAD, "
              "transcription, storage (writes media.json, MEDIA.md)."),
}  # command -> (module with main(argv), one-line help)


def register(app: typer.Typer) -> None:
    """Add :data:`SCRIPTS` to ``app``."""
    add_scripts(app, SCRIPTS, PANEL)
