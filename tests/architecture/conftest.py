"""What the install tests here share: a served store to reach over loopback."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from omnimem import Memory
from tests.server.test_serve_startup import serving


@pytest.fixture
def server(tmp_path: Path) -> Iterator[str]:
    """``omnimem serve`` (this checkout's full install) in a process of its own, on a free loopback port,
    without keys; its URL."""
    with Memory(tmp_path / "served", embedder="fake"):  # a store of the fake embedder: no model to load
        pass
    with serving("--store", str(tmp_path / "served"), "--no-auth") as served:
        served.ready()
        yield served.url
        served.stop()
