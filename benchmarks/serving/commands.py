"""The serving group's commands (mounted by :mod:`benchmarks.cli` through :func:`register`)."""

from __future__ import annotations

import typer

from benchmarks.harness.commands import add_scripts

PANEL = "Serving: omnimem serve, the writer and MCP under load"
SCRIPTS = {
    "serve-load": ("benchmarks.serving.serve_load", "Loopback HTTP load test of omnimem serve: --clients 32 --seconds "
                   "60, 80% search / 20% add (writes serve-load.json, serve-load.md)."),
    "writer-burst": ("benchmarks.serving.writer_burst", "An add in a burst of concurrent in-process adds against a "
                     "lone add, interleaved: --rounds 8 --burst 24 (writes writer-burst.json, .md)."),
    "mcp-latency": ("benchmarks.serving.mcp_latency", "add and search over MCP (in-process and streamable HTTP) "
                    "against the facade in-process, interleaved (writes mcp-latency.json, .md)."),
    "slow-model": ("benchmarks.serving.slow_model", "Plain search p95 while --planned 6 planned searches wait for a "
                   "30 s model, against idle, same run (writes slow-model.json, .md)."),
    "load-profile": ("benchmarks.serving.load_profile", "Where a search waits under the 32-client mixed load: py-spy "
                     "samples of the server by stage: --py-spy PATH, or --summarise RAW (writes --out JSON, .md)."),
}  # command -> (module with main(argv), one-line help)


def register(app: typer.Typer) -> None:
    """Add :data:`SCRIPTS` to ``app``."""
    add_scripts(app, SCRIPTS, PANEL)
