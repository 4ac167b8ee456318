"""Fixtures for the benchmark tests: where the real data sets live."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """The shared benchmark data folder.

    Taken from ``OMNIMEM_DATA_DIR``, else ``../shared/data`` next to the repo.
    A missing folder skips the test, unless ``OMNIMEM_REQUIRE_DATA=1`` (CI with
    the data mounted), where it fails instead.
    """
    configured = os.environ.get("OMNIMEM_DATA_DIR")
    path = Path(configured) if configured else REPO_ROOT.parent / "shared" / "data"
    if not path.is_dir():
        reason = f"benchmark data folder {path} not found; set OMNIMEM_DATA_DIR to it"
        if os.environ.get("OMNIMEM_REQUIRE_DATA") == "1":
            pytest.fail(f"{reason} (OMNIMEM_REQUIRE_DATA=1)")
        pytest.skip(reason)
    return path
