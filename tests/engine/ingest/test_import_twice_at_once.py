"""The same export imported twice at once (a client retrying a slow import) stores each unit once, no error.

A large import is written in steps (other writers get in between), so a retry
can decide to store the same unit ids as the first call before either writes
them. The write's own check, inside its transaction, finds the unit already
stored with the same content and skips it as a duplicate of itself; the same
id with other content is still refused.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from omnimem import Memory
from omnimem.embed.base import Vectors
from omnimem.embed.fake import FakeEmbedder
from omnimem.engine.ingest.pipeline import BATCH
from tests.postgres_server import PostgresServer


class FirstCallWaits(FakeEmbedder):
    """The fake embedder; its first call waits until ``go`` (the other import has decided its first batch)."""

    def __init__(self) -> None:
        super().__init__()
        self.go = threading.Event()
        self.calls = 0
        self.lock = threading.Lock()

    def embed(self, texts: Sequence[str]) -> Vectors:
        with self.lock:
            self.calls += 1
            first = self.calls == 1
        if first:
            self.go.wait(10)
        return np.asarray(super().embed(texts))


@pytest.fixture(params=["path", "postgresql"])
def target(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    embedder = FirstCallWaits()
    if request.param == "postgresql":
        server: PostgresServer = request.getfixturevalue("postgres")
        mem = Memory(url=server.fresh(), embedder=embedder)
    else:
        mem = Memory(tmp_path / "dst", embedder=embedder)
    yield mem, embedder
    mem.close()


def test_an_import_and_its_retry_at_once_store_each_unit_once(target: Any, tmp_path: Path) -> None:
    mem, embedder = target
    with Memory(tmp_path / "src", embedder="fake") as src:
        for i in range(BATCH + 10):
            src.add(f"note {i} about lantern {i}", user_id="ann")
        dump = list(src.export(user_id="ann"))
    out: dict[str, Any] = {}

    def run(name: str) -> None:
        try:
            out[name] = mem.import_records(dump)
        except Exception as error:  # the test reports what went wrong, not just that a thread died
            out[name] = error

    first = threading.Thread(target=run, args=("first",))
    first.start()
    time.sleep(0.5)  # the first import embeds its first batch and waits there
    retry = threading.Thread(target=run, args=("retry",))
    retry.start()
    time.sleep(0.5)  # the retry decides the same units: not stored yet
    embedder.go.set()
    first.join(30)
    retry.join(30)
    assert not any(isinstance(v, Exception) for v in out.values()), out
    assert out["first"]["stored"] + out["retry"]["stored"] == BATCH + 10
    assert out["first"]["stored"] + out["first"]["skipped"] == BATCH + 10
    assert mem.count_units(user_id="ann") == BATCH + 10
    assert mem.import_records(dump)["stored"] == 0  # and a third time: everything is there already
