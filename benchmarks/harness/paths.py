"""Where the benchmarks write: the repository root and ``benchmarks/results``, wherever a module sits."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]  # the repository (benchmarks/harness/paths.py)
RESULTS = ROOT / "benchmarks" / "results"
