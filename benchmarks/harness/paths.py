"""Where the benchmarks write: the repository root and ``benchmarks/results``, wherever a module sits."""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]  # the repository (benchmarks/harness/paths.py)
RESULTS = ROOT / "benchmarks" / "results"


def data_dir(explicit: Path | None = None) -> Path:
    """The benchmark data folder: ``explicit``, else $OMNIMEM_DATA_DIR, else ../shared/data."""
    if explicit is not None:
        return explicit
    configured = os.environ.get("OMNIMEM_DATA_DIR")
    return Path(configured) if configured else Path("..") / "shared" / "data"


def default_cache() -> Path:
    """The vector cache kept between LongMemEval runs."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "omnimem" / "bench-vectors.npz"
