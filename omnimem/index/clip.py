"""Text-to-image search with a user-supplied CLIP checkpoint.

Image units (photos and video frames) get a CLIP image vector next to their
text embedding; a query's CLIP text vector then finds images whose captions
never mention what is in them. The vectors live in the hot tier (table
``clip_vectors``); this in-memory FAISS index is rebuilt from it whenever the
store's change counter moves, which is cheap: images are a small share.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from omnimem.index.dense import DenseIndex, Ids
from omnimem.mau import MAU, Modality
from omnimem.store.base import Store


class ClipSearch:
    """CLIP vectors of image units and the index over them."""

    def __init__(self, store: Store, embedder: object) -> None:
        from omnimem.media.clip import CLIPImageEmbedder

        assert isinstance(embedder, CLIPImageEmbedder)
        self.store = store
        self.embedder = embedder
        self._index = DenseIndex(embedder.dim)
        self._seq = -1
        self._lock = threading.Lock()

    def writer(
        self, units: Sequence[MAU], raw: Mapping[str, bytes]
    ) -> Callable[[sqlite3.Connection], None] | None:
        """Embed the images among ``units`` (slow; outside locks) and return the row writer.

        ``raw`` holds the new units' bytes by cold-tier reference (not stored yet).
        """
        images = [u for u in units if u.modality is Modality.IMAGE and u.raw_ref in raw]
        if not images:
            return None
        vectors = self.embedder.embed_images([raw[u.raw_ref or ""] for u in images])
        rows = [(u.id, self.embedder.name, np.asarray(v, dtype=np.float32).tobytes()) for u, v in zip(images, vectors)]

        def write(conn: sqlite3.Connection) -> None:
            conn.executemany("INSERT OR REPLACE INTO clip_vectors(unit_id, model, vector) VALUES (?, ?, ?)", rows)

        return write

    def search(self, query: str, k: int, allowed: Ids | None) -> list[tuple[int, float]]:
        """Image units nearest to the query's CLIP text vector."""
        with self._lock:
            if self.store.seq() != self._seq:
                self._rebuild()
            index = self._index
        if len(index) == 0:
            return []
        vector = self.embedder.embed_texts([query])[0]
        return index.search(vector, k, allowed)

    def _rebuild(self) -> None:
        seq = self.store.seq()
        rids, vectors = self.store.clip_vectors(self.embedder.name)
        index = DenseIndex(self.embedder.dim)
        if vectors is not None:
            index.add(rids.tolist(), vectors)
        self._index, self._seq = index, seq
