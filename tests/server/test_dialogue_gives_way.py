"""Over a real server: another user's add is answered while one user's large dialogue is being written.

``POST /v1/dialogues`` with a few batches of turns; the embedder holds the
dialogue's second batch until the test releases it. Meanwhile bob's
``POST /v1/units`` must be answered (it used to wait for the whole dialogue),
and a reader already sees the dialogue's first batch, as docs/http-api.md says.
Then the dialogue completes whole, and both users' writes are there.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx
import numpy as np

from omnimem import Memory
from omnimem.embed.base import Vectors
from omnimem.embed.fake import FakeEmbedder
from omnimem.engine.ingest.pipeline import BATCH
from tests.serving import LiveServer

TURNS = 3 * BATCH


class HoldsTheSecondBatch(FakeEmbedder):
    """The fake embedder, except that the batch holding turn ``BATCH`` of ann's dialogue waits for ``release``."""

    def __init__(self) -> None:
        super().__init__()
        self.release = threading.Event()
        self.holding = threading.Event()

    def embed(self, texts: Sequence[str]) -> Vectors:
        if any(f"ann turn {BATCH} about" in t for t in texts):
            self.holding.set()
            self.release.wait(30)
        return np.asarray(super().embed(texts))


def _dialogue() -> dict[str, Any]:
    turns = [{"text": f"ann turn {i} about the harbour lantern number {i}", "speaker": "Ann", "id": f"t{i}"}
             for i in range(TURNS)]
    return {"turns": turns, "user_id": "ann", "session_id": "long"}


def test_another_users_add_is_answered_while_a_large_dialogue_is_written(tmp_path: Path) -> None:
    embedder = HoldsTheSecondBatch()
    with Memory(tmp_path / "store", embedder=embedder) as memory:
        live = LiveServer(memory, auth=False, rate_limit=None)
        answer: dict[str, httpx.Response] = {}

        def post_dialogue() -> None:
            answer["dialogue"] = httpx.post(f"{live.url}/v1/dialogues", json=_dialogue(), timeout=60)

        writer = threading.Thread(target=post_dialogue)
        try:
            writer.start()
            assert embedder.holding.wait(20), f"the dialogue never reached its second batch: {answer}"
            added = httpx.post(f"{live.url}/v1/units", json={"text": "bob keeps his bicycle in the shed",
                                                            "user_id": "bob"}, timeout=20)
            assert added.status_code == 201 and added.json()["accepted"]
            assert "dialogue" not in answer  # bob was answered while ann's dialogue was still being written
            mid = httpx.post(f"{live.url}/v1/search", json={"query": "harbour lantern", "user_id": "ann",
                                                           "budget": 100_000}, timeout=20).json()
            seen = {hit["unit"]["source_ids"][0] for hit in mid["hits"]}
            assert seen == {f"t{i}" for i in range(BATCH)}  # a reader sees the committed first batch, no more
            embedder.release.set()
            writer.join(30)
            assert answer["dialogue"].status_code == 200
            assert sum(r["accepted"] for r in answer["dialogue"].json()["results"]) == TURNS
            bob = httpx.post(f"{live.url}/v1/search", json={"query": "bicycle", "user_id": "bob"}, timeout=20).json()
            assert [hit["unit"]["id"] for hit in bob["hits"]] == [added.json()["id"]]
        finally:
            embedder.release.set()
            writer.join(30)
            live.stop()
